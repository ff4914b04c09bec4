import type { Knex } from 'knex';

/**
 * The whole schema. Constraints live here, not only in code: unique usernames, emails and group
 * paths (case-insensitively, via stored lower-case keys), one role per membership, foreign keys
 * that cascade where a parent's removal must take its children with it.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('users', (t) => {
    t.increments('id').primary();
    t.string('username', 39).notNullable();
    t.string('username_key', 39).notNullable().unique();
    t.string('email', 254).notNullable();
    t.string('email_key', 254).notNullable().unique();
    t.string('name', 100).notNullable().defaultTo('');
    t.string('password_hash', 255).notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
    // The unique keys must be the lower-cased values, so uniqueness is case-insensitive in the schema itself.
    t.check('username_key = lower(username)', [], 'users_username_key_check');
    t.check('email_key = lower(email)', [], 'users_email_key_check');
  });

  await knex.schema.createTable('groups', (t) => {
    t.increments('id').primary();
    t.string('name', 100).notNullable();
    t.string('path', 64).notNullable().unique();
    t.string('description', 400).notNullable().defaultTo('');
    t.string('visibility_level', 16).notNullable().defaultTo('private');
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
    t.check("visibility_level in ('private', 'internal', 'public')", [], 'groups_visibility_check');
  });

  await knex.schema.createTable('memberships', (t) => {
    t.integer('group_id').unsigned().notNullable().references('id').inTable('groups').onDelete('CASCADE');
    t.integer('user_id').unsigned().notNullable().references('id').inTable('users').onDelete('CASCADE');
    t.string('role', 16).notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.primary(['group_id', 'user_id']);
    t.index(['user_id', 'group_id'], 'memberships_user_idx');
    t.check("role in ('owner', 'maintainer', 'member')", [], 'memberships_role_check');
  });

  await knex.schema.createTable('oauth_apps', (t) => {
    t.increments('id').primary();
    t.string('client_id', 64).notNullable().unique();
    t.integer('group_id').unsigned().notNullable().references('id').inTable('groups').onDelete('CASCADE');
    t.string('name', 100).notNullable();
    t.string('homepage_url', 2048).notNullable();
    t.string('description', 400).notNullable().defaultTo('');
    t.string('callback_url', 2048).notNullable();
    t.integer('created_by').unsigned().nullable().references('id').inTable('users').onDelete('SET NULL');
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
    t.index(['group_id', 'id'], 'oauth_apps_group_idx');
  });

  await knex.schema.createTable('oauth_app_secrets', (t) => {
    t.increments('id').primary();
    t.integer('app_id').unsigned().notNullable().references('id').inTable('oauth_apps').onDelete('CASCADE');
    t.string('digest', 64).notNullable().unique();
    t.string('last_four', 4).notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('last_used_at', { useTz: true }).nullable();
    t.index(['app_id'], 'oauth_app_secrets_app_idx');
  });

  await knex.schema.createTable('personal_access_tokens', (t) => {
    t.increments('id').primary();
    t.integer('user_id').unsigned().notNullable().references('id').inTable('users').onDelete('CASCADE');
    t.string('name', 100).notNullable();
    t.string('digest', 64).notNullable().unique();
    t.string('scopes', 255).notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('last_used_at', { useTz: true }).nullable();
    t.timestamp('expires_at', { useTz: true }).nullable();
    t.index(['user_id', 'id'], 'personal_access_tokens_user_idx');
  });

  // Which grant a user gave which application: lets a returning user skip consent in any
  // session, lists "Authorized applications", and finds every grant of a deleted application.
  await knex.schema.createTable('user_grants', (t) => {
    t.integer('user_id').unsigned().notNullable().references('id').inTable('users').onDelete('CASCADE');
    t.string('client_id', 64).notNullable().references('client_id').inTable('oauth_apps').onDelete('CASCADE');
    t.string('grant_id', 64).notNullable();
    t.string('scopes', 255).notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('last_used_at', { useTz: true }).nullable();
    t.primary(['user_id', 'client_id']);
    t.index(['client_id'], 'user_grants_client_idx');
  });

  // Signing keys (private JWKs) and cookie-signing keys, shared by every instance.
  await knex.schema.createTable('keys', (t) => {
    t.increments('id').primary();
    t.string('kind', 16).notNullable();
    t.text('material').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.check("kind in ('signing', 'cookie')", [], 'keys_kind_check');
  });

  await knex.schema.createTable('audit_events', (t) => {
    t.increments('id').primary();
    t.integer('group_id').unsigned().nullable().references('id').inTable('groups').onDelete('CASCADE');
    t.integer('actor_id').unsigned().nullable().references('id').inTable('users').onDelete('SET NULL');
    t.string('action', 64).notNullable();
    t.string('target', 255).notNullable().defaultTo('');
    t.text('details').notNullable().defaultTo('{}');
    t.string('ip', 64).nullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.index(['group_id', 'id'], 'audit_events_group_idx');
  });

  // oidc-provider's models (sessions, interactions, codes, tokens, grants) when REDIS_URL is
  // unset. `id` is the SHA-256 digest of the model's id, never the id itself.
  await knex.schema.createTable('oidc_models', (t) => {
    t.string('model', 32).notNullable();
    t.string('id', 64).notNullable();
    t.text('payload').notNullable();
    t.string('grant_id', 64).nullable();
    t.string('user_code', 64).nullable();
    t.string('uid', 64).nullable();
    t.bigInteger('expires_at').nullable();
    t.bigInteger('consumed_at').nullable();
    t.primary(['model', 'id']);
    t.index(['grant_id'], 'oidc_models_grant_idx');
    t.index(['model', 'uid'], 'oidc_models_uid_idx');
    t.index(['model', 'user_code'], 'oidc_models_user_code_idx');
    t.index(['expires_at'], 'oidc_models_expires_idx');
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of [
    'oidc_models', 'audit_events', 'keys', 'user_grants', 'personal_access_tokens',
    'oauth_app_secrets', 'oauth_apps', 'memberships', 'groups', 'users',
  ]) {
    await knex.schema.dropTableIfExists(table);
  }
}
