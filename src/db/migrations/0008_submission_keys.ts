import type { Knex } from 'knex';

/**
 * `submission_keys`: the one-time key each creating form carries, with what its first
 * submission created. The key is unique, so of any number of copies of one submission (a reload,
 * a double click, Back and resubmit, copies sent at once) only one can claim it: the claim is
 * written in the transaction that creates the record, before it. `kind` says what was created
 * (group, app, secret, token, member) and `record_id` which one (a group's or a token's id, an
 * application's client id, …). A key belongs to the user who submitted it; it goes with them.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('submission_keys', (t) => {
    t.increments('id').primary();
    t.string('key', 64).notNullable().unique('submission_keys_key_unique');
    t.integer('user_id').unsigned().notNullable().references('id').inTable('users').onDelete('CASCADE');
    t.string('kind', 16).notNullable();
    t.string('record_id', 64).nullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.index(['created_at'], 'submission_keys_created_idx');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('submission_keys');
}
