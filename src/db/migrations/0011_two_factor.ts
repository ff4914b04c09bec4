import type { Knex } from 'knex';

/**
 * Two-factor authentication.
 *
 * `user_totp`: one authenticator app per user. `secret` is the TOTP key, sealed with KEYS_SECRET
 * when it is set. A row without `confirmed_at` is a set-up in progress (the QR code shown, no
 * code entered yet) and does not ask for a second factor. `last_step` is the time step of the
 * last code accepted: a code is accepted only for a later step, so each code works once.
 *
 * `recovery_codes`: ten per user, stored as SHA-256 digests, each spent by setting `used_at`.
 *
 * `webauthn_credentials`: passkeys, by their credential id (base64url), with the public key,
 * the signature counter and a name the person chose.
 *
 * `groups.require_two_factor`: the group's members must have two-factor authentication on to
 * use its pages and API.
 *
 * `webauthn_used_challenges`: the digest of every challenge a passkey answered, until it
 * expires: a challenge answers once, so a captured answer cannot be played again.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('user_totp', (t) => {
    t.integer('user_id').unsigned().primary().references('id').inTable('users').onDelete('CASCADE');
    t.string('secret', 512).notNullable();
    t.bigInteger('last_step').nullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('confirmed_at', { useTz: true }).nullable();
  });
  await knex.schema.createTable('recovery_codes', (t) => {
    t.increments('id').primary();
    t.integer('user_id').unsigned().notNullable().references('id').inTable('users').onDelete('CASCADE');
    t.string('digest', 64).notNullable().unique();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('used_at', { useTz: true }).nullable();
    t.index(['user_id'], 'recovery_codes_user_idx');
  });
  await knex.schema.createTable('webauthn_credentials', (t) => {
    t.increments('id').primary();
    t.integer('user_id').unsigned().notNullable().references('id').inTable('users').onDelete('CASCADE');
    t.string('credential_id', 1024).notNullable().unique();
    t.text('public_key').notNullable();
    t.bigInteger('counter').notNullable().defaultTo(0);
    t.string('transports', 200).notNullable().defaultTo('');
    t.string('name', 100).notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('last_used_at', { useTz: true }).nullable();
    t.index(['user_id'], 'webauthn_credentials_user_idx');
  });
  await knex.schema.createTable('webauthn_used_challenges', (t) => {
    t.string('digest', 64).primary();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.index(['expires_at'], 'webauthn_used_challenges_expires_idx');
  });
  await knex.schema.alterTable('groups', (t) => {
    t.boolean('require_two_factor').notNullable().defaultTo(false);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('groups', (t) => {
    t.dropColumn('require_two_factor');
  });
  await knex.schema.dropTableIfExists('webauthn_used_challenges');
  await knex.schema.dropTableIfExists('webauthn_credentials');
  await knex.schema.dropTableIfExists('recovery_codes');
  await knex.schema.dropTableIfExists('user_totp');
}
