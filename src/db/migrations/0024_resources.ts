import type { Knex } from 'knex';

/**
 * Resources: the APIs (an MCP server, say) a group puts behind the service, each named by its
 * resource identifier (RFC 8707), an absolute URL unique on the site. A client asks for a token
 * for one with `resource=<identifier>`; the token is bound to it (`aud`) and carries only the
 * resource's own scopes.
 *
 * `scopes` is a JSON array of `{ name, description }`; the consent page shows the descriptions.
 * `token_format` is `opaque` (an `ho_` token the resource's server introspects) or `jwt` (RFC 9068,
 * verified with the service's JWKS). `client_id` and `secret_digest` are the credentials the
 * resource's server introspects with (HTTP Basic at the introspection endpoint): the secret is kept
 * as its SHA-256 only, like applications' secrets.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('resources', (t) => {
    t.increments('id').primary();
    t.integer('group_id').unsigned().notNullable().references('id').inTable('groups').onDelete('CASCADE');
    t.string('identifier', 500).notNullable().unique();
    t.string('name', 100).notNullable();
    t.text('scopes').notNullable();
    t.string('token_format', 10).notNullable().defaultTo('opaque');
    t.string('client_id', 64).notNullable().unique();
    t.string('secret_digest', 64).notNullable();
    t.string('secret_last_four', 4).notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
    t.index(['group_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('resources');
}
