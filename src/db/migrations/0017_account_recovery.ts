import type { Knex } from 'knex';

/**
 * Addresses proved before they are used.
 *
 * `pending_signups`: a sign-up waiting for the link mailed to its address. No account exists
 * until the link is followed (and the password given again), so neither the answer to a sign-up
 * nor a later sign-in can tell whether the address already had an account. The password is kept
 * only as its Argon2id hash and the link only as the SHA-256 digest of its token; `attempts`
 * counts wrong passwords given with the link, which is spent after a few.
 *
 * `email_changes`: a new address an account asked for, kept until the link mailed to it is
 * followed; the account keeps its current address until then. Only the token's digest is stored.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('pending_signups', (t) => {
    t.increments('id').primary();
    t.string('username', 39).notNullable();
    t.string('email', 254).notNullable();
    t.string('name', 100).notNullable().defaultTo('');
    t.string('password_hash', 255).notNullable();
    t.string('digest', 64).notNullable().unique();
    t.integer('attempts').notNullable().defaultTo(0);
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('used_at', { useTz: true }).nullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.index(['expires_at'], 'pending_signups_expires_idx');
  });
  await knex.schema.createTable('email_changes', (t) => {
    t.increments('id').primary();
    t.integer('user_id').unsigned().notNullable().references('id').inTable('users').onDelete('CASCADE');
    t.string('email', 254).notNullable();
    t.string('digest', 64).notNullable().unique();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('used_at', { useTz: true }).nullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.index(['user_id'], 'email_changes_user_idx');
    t.index(['expires_at'], 'email_changes_expires_idx');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('email_changes');
  await knex.schema.dropTableIfExists('pending_signups');
}
