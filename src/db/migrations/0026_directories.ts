import type { Knex } from 'knex';

/**
 * Sign-in with a directory (LDAP, Active Directory), a sign-in provider of kind `ldap`.
 *
 * `user_identities.suspended_at`: the directory no longer found the person, or marked them
 * disabled, and the account was disabled for it. Cleared, and the account enabled again, when the
 * directory finds them active again; an account an administrator disabled has none, and stays so.
 *
 * `memberships.managed_by`: the directory provider whose group mapping gave the membership. Such a
 * membership follows the directory at each sign-in (its role changes, it is removed when the
 * person leaves the directory group); one given by a person (no provider) is never touched by it.
 *
 * `sign_in_providers.checked_at`: when a directory's linked accounts were last checked against it,
 * so that one instance runs each check.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('user_identities', (t) => {
    t.timestamp('suspended_at', { useTz: true }).nullable();
  });
  await knex.schema.alterTable('memberships', (t) => {
    t.integer('managed_by').nullable();
  });
  await knex.schema.alterTable('sign_in_providers', (t) => {
    t.timestamp('checked_at', { useTz: true }).nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('sign_in_providers', (t) => t.dropColumn('checked_at'));
  await knex.schema.alterTable('memberships', (t) => t.dropColumn('managed_by'));
  await knex.schema.alterTable('user_identities', (t) => t.dropColumn('suspended_at'));
}
