import type { Knex } from 'knex';

/**
 * Sign-in with upstream identity providers.
 *
 * `sign_in_providers`: an upstream a site administrator registered — an OpenID Connect issuer,
 * GitHub (or GitHub Enterprise Server), GitLab, Google or Microsoft Entra ID. `slug` names it in
 * its callback URL (`/login/callback/<slug>`). `client_secret` is sealed with KEYS_SECRET like
 * the signing keys (clear only when no KEYS_SECRET is set, as the keys are). `settings` is the
 * kind's own JSON (issuer URL, base URL, tenant). `allowed_domains` is a space-separated list of
 * e-mail domains; empty allows any. `disabled_at` hides it from the sign-in pages and refuses its
 * callbacks while keeping its linked identities.
 *
 * `user_identities`: an upstream identity linked to an account, by the upstream's stable subject
 * (never by e-mail). One account has at most one identity per provider; an upstream subject
 * belongs to at most one account.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('sign_in_providers', (t) => {
    t.increments('id').primary();
    t.string('slug', 40).notNullable().unique();
    t.string('kind', 20).notNullable();
    t.string('name', 60).notNullable();
    t.string('client_id', 255).notNullable();
    t.text('client_secret').notNullable();
    t.string('scopes', 500).notNullable().defaultTo('');
    t.text('settings').notNullable().defaultTo('{}');
    t.boolean('allow_sign_up').notNullable().defaultTo(false);
    t.string('allowed_domains', 1000).notNullable().defaultTo('');
    t.boolean('trust_mfa').notNullable().defaultTo(false);
    t.integer('position').notNullable().defaultTo(0);
    t.timestamp('disabled_at', { useTz: true }).nullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
  });
  await knex.schema.createTable('user_identities', (t) => {
    t.increments('id').primary();
    t.integer('user_id').unsigned().notNullable().references('id').inTable('users').onDelete('CASCADE');
    t.integer('provider_id').unsigned().notNullable().references('id').inTable('sign_in_providers').onDelete('CASCADE');
    t.string('subject', 255).notNullable();
    t.string('username', 255).notNullable().defaultTo('');
    t.string('email', 254).notNullable().defaultTo('');
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('last_used_at', { useTz: true }).nullable();
    t.unique(['provider_id', 'subject'], { indexName: 'user_identities_subject_unique' });
    t.unique(['user_id', 'provider_id'], { indexName: 'user_identities_user_provider_unique' });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('user_identities');
  await knex.schema.dropTableIfExists('sign_in_providers');
}
