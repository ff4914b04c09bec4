import type { Knex } from 'knex';

/**
 * `user_sessions.confirmed_at`: when the person last proved, in this very session, that they
 * are the account's owner (the password, a second factor or a passkey typed or used again after
 * signing in). Changes that would let a stolen session keep or widen its access (a passkey, a
 * second factor, a personal access token, …) need such a proof, or the sign-in itself, within the
 * last few minutes. NULL: not since the session signed in.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('user_sessions', (t) => {
    t.timestamp('confirmed_at', { useTz: true }).nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('user_sessions', (t) => {
    t.dropColumn('confirmed_at');
  });
}
