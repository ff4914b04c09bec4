import type { Knex } from 'knex';

/**
 * Site administrators and disabled accounts. `is_admin` opens the Admin area; `disabled_at` (set
 * while an administrator keeps the account closed) refuses the account everywhere a user is loaded.
 *
 * The admin audit log needs no table of its own: its events are `audit_events` rows with no
 * `group_id`. They share the one writer (in the transaction of the change), the actor column that
 * survives a deleted user, and the (group_id, id) index, which serves `group_id is null` newest
 * first on both databases; a group's deletion cascades only to rows of that group.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('users', (t) => {
    t.boolean('is_admin').notNullable().defaultTo(false);
    t.timestamp('disabled_at', { useTz: true }).nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('users', (t) => {
    t.dropColumn('disabled_at');
    t.dropColumn('is_admin');
  });
}
