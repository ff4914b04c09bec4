import type { Knex } from 'knex';

/**
 * `oauth_apps.allow_client_credentials`: a confidential application may act as itself with the
 * client credentials grant (RFC 6749 §4.4), in its own group only. Off unless its owners turn it on.
 * `audit_events.actor_client_id`: the application that made a change with such a token (the row
 * then has no acting user).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('oauth_apps', (t) => {
    t.boolean('allow_client_credentials').notNullable().defaultTo(false);
  });
  await knex.schema.alterTable('audit_events', (t) => {
    t.string('actor_client_id', 64).nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('audit_events', (t) => {
    t.dropColumn('actor_client_id');
  });
  await knex.schema.alterTable('oauth_apps', (t) => {
    t.dropColumn('allow_client_credentials');
  });
}
