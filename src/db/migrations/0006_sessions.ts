import type { Knex } from 'knex';

/**
 * `user_sessions`: which browser sessions a user has, for Account settings → Sessions and for
 * signing out everywhere. The sessions themselves live in oidc-provider's store; a row names one
 * by its `uid` (never its id, which is the cookie's value), with where it was last seen from.
 *
 * `audit_events.actor_deleted`: an event whose actor deleted their account keeps saying so (the
 * actor id is cleared with the account, which alone would read as the admin CLI).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('user_sessions', (t) => {
    t.string('uid', 64).primary();
    t.integer('user_id').unsigned().notNullable().references('id').inTable('users').onDelete('CASCADE');
    t.string('ip', 64).nullable();
    t.string('user_agent', 512).notNullable().defaultTo('');
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('last_seen_at', { useTz: true }).notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.index(['user_id'], 'user_sessions_user_idx');
    t.index(['expires_at'], 'user_sessions_expires_idx');
  });
  await knex.schema.alterTable('audit_events', (t) => {
    t.boolean('actor_deleted').notNullable().defaultTo(false);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('audit_events', (t) => {
    t.dropColumn('actor_deleted');
  });
  await knex.schema.dropTableIfExists('user_sessions');
}
