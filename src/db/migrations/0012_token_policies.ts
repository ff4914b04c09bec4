import type { Knex } from 'knex';

/**
 * Fine-grained personal access tokens, groups' token policies and the user's own audit trail.
 *
 * `personal_access_tokens.groups_limited`: the token acts only in the groups listed for it in
 * `personal_token_groups` (none left listed: in no group); false, in all its user's groups.
 *
 * `groups.personal_token_max_lifetime_days`: the longest lifetime (expiry − creation) of a
 * personal access token the group accepts; null, no cap. A token without expiry exceeds any cap.
 *
 * `audit_events.user_id`: an event of a user's own account (a personal access token revoked
 * because it was reported public), shown to that user; such rows belong to no group and are not
 * the site's log. They go with the account.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('personal_access_tokens', (t) => {
    t.boolean('groups_limited').notNullable().defaultTo(false);
  });
  await knex.schema.createTable('personal_token_groups', (t) => {
    t.integer('token_id').unsigned().notNullable().references('id').inTable('personal_access_tokens').onDelete('CASCADE');
    t.integer('group_id').unsigned().notNullable().references('id').inTable('groups').onDelete('CASCADE');
    t.primary(['token_id', 'group_id']);
    t.index(['group_id'], 'personal_token_groups_group_idx');
  });
  await knex.schema.alterTable('groups', (t) => {
    t.integer('personal_token_max_lifetime_days').nullable();
  });
  await knex.schema.alterTable('audit_events', (t) => {
    t.integer('user_id').unsigned().nullable().references('id').inTable('users').onDelete('CASCADE');
    t.index(['user_id', 'id'], 'audit_events_user_idx');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('audit_events', (t) => {
    t.dropIndex(['user_id', 'id'], 'audit_events_user_idx');
    t.dropForeign(['user_id']);
    t.dropColumn('user_id');
  });
  await knex.schema.alterTable('groups', (t) => {
    t.dropColumn('personal_token_max_lifetime_days');
  });
  await knex.schema.dropTableIfExists('personal_token_groups');
  await knex.schema.alterTable('personal_access_tokens', (t) => {
    t.dropColumn('groups_limited');
  });
}
