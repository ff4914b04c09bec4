import type { Knex } from 'knex';

/**
 * Back-channel logout URL of an application (OpenID Connect Back-Channel Logout 1.0): where the
 * service POSTs a signed logout token when a session the application signed in through ends.
 * Null for none; read with the application on every client lookup.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('oauth_apps', (t) => {
    t.text('backchannel_logout_uri').nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('oauth_apps', (t) => {
    t.dropColumn('backchannel_logout_uri');
  });
}
