import type { Knex } from 'knex';

/**
 * One-time links sent by mail (verify an e-mail address, reset a password) and the verification
 * state of each account. A link is kept as the SHA-256 digest of its token, never the token, with
 * the address it was sent to: following a verification link proves that address, not whatever
 * the account's address is by then.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('account_links', (t) => {
    t.increments('id').primary();
    t.string('purpose', 32).notNullable();
    t.integer('user_id').unsigned().notNullable().references('id').inTable('users').onDelete('CASCADE');
    t.string('email', 254).notNullable();
    t.string('digest', 64).notNullable().unique();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('used_at', { useTz: true }).nullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.index(['user_id', 'purpose'], 'account_links_user_idx');
    t.check("purpose in ('verify-email', 'reset-password')", [], 'account_links_purpose_check');
  });
  await knex.schema.alterTable('users', (t) => {
    t.timestamp('email_verified_at', { useTz: true }).nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('users', (t) => {
    t.dropColumn('email_verified_at');
  });
  await knex.schema.dropTable('account_links');
}
