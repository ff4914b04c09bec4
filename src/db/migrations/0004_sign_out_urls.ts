import type { Knex } from 'knex';

/**
 * Sign-out redirect URLs of an application: where RP-initiated logout may send a person back to
 * (oidc-provider's post_logout_redirect_uris). A JSON array of strings, `[]` for none; they are
 * read with the application on every client lookup, so a column keeps that one round trip.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('oauth_apps', (t) => {
    t.text('sign_out_urls').notNullable().defaultTo('[]');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('oauth_apps', (t) => {
    t.dropColumn('sign_out_urls');
  });
}
