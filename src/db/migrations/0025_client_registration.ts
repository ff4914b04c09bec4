import type { Knex } from 'knex';


/**
 * Clients that register themselves, without a person at a form: by a Client ID Metadata Document
 * (the `client_id` is an https URL the service fetches) or by Dynamic Client Registration
 * (RFC 7591). Each way is off until a site administrator turns it on and chooses the group such
 * clients belong to.
 *
 * `client_registration`: one row (id 1) of those switches; no row means both are off. A deleted
 * group leaves `group_id` null, which turns registration off until another is chosen.
 *
 * `oauth_apps`, for such clients: `registered_by` (`metadata_document` or `dynamic`; null for an
 * application a person registered), `registered_from` (the document's host, or the address that
 * sent the registration), `redirect_uris` (a JSON array: every redirect URI, where a person's
 * application has only `callback_url`), `metadata_expires_at` (when a metadata document is fetched
 * again). A metadata document's client id is its URL, so client ids grow to 255 characters on
 * PostgreSQL (SQLite does not enforce a string's length).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('client_registration', (t) => {
    t.integer('id').primary();
    t.boolean('metadata_documents').notNullable().defaultTo(false);
    t.boolean('dynamic_registration').notNullable().defaultTo(false);
    t.integer('group_id').unsigned().nullable().references('id').inTable('groups').onDelete('SET NULL');
    t.timestamp('updated_at', { useTz: true }).notNullable();
  });
  await knex.schema.alterTable('oauth_apps', (t) => {
    t.string('registered_by', 20).nullable();
    t.string('registered_from', 255).nullable();
    t.text('redirect_uris').nullable();
    t.timestamp('metadata_expires_at', { useTz: true }).nullable();
  });
  // PostgreSQL enforces a string column's length; SQLite does not.
  if (knex.client.config.client === 'pg') {
    await knex.raw('alter table oauth_apps alter column client_id type varchar(255)');
    await knex.raw('alter table user_grants alter column client_id type varchar(255)');
    await knex.raw('alter table audit_events alter column actor_client_id type varchar(255)');
  }
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('oauth_apps', (t) => {
    t.dropColumn('metadata_expires_at');
    t.dropColumn('redirect_uris');
    t.dropColumn('registered_from');
    t.dropColumn('registered_by');
  });
  await knex.schema.dropTable('client_registration');
}
