import type { Knex } from 'knex';

/**
 * `users.language`: the language the account chose for its pages and mails (`en`, `de`, `ja`).
 * NULL: none chosen; the pages follow the browser's Accept-Language.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('users', (t) => {
    t.string('language', 8).nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('users', (t) => {
    t.dropColumn('language');
  });
}
