import type { Knex } from 'knex';

/**
 * An application's type: `confidential` (a server that keeps a client secret and authenticates
 * at the token endpoint with it) or `public` (a native or single-page application that cannot
 * keep a secret: no secret, no client authentication, PKCE S256 required at authorize). Every
 * application registered before this column is confidential.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('oauth_apps', (t) => {
    t.string('client_type', 16).notNullable().defaultTo('confidential');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('oauth_apps', (t) => {
    t.dropColumn('client_type');
  });
}
