import type { Knex } from 'knex';

/**
 * Two opt-ins of an application, both off for every application registered before them:
 * `device_flow` lets it use the device authorization grant (RFC 8628), and
 * `require_pushed_authorization_requests` refuses its authorization requests unless they were
 * pushed first (RFC 9126).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('oauth_apps', (t) => {
    t.boolean('device_flow').notNullable().defaultTo(false);
    t.boolean('require_pushed_authorization_requests').notNullable().defaultTo(false);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('oauth_apps', (t) => {
    t.dropColumn('device_flow');
    t.dropColumn('require_pushed_authorization_requests');
  });
}
