import type { Knex } from 'knex';

/**
 * Counters of the abuse limits when there is no Redis: the table rate-limiter-flexible's SQL
 * stores expect (`key`, `points`, `expire` in ms since the epoch), created here so that nothing
 * is created at request time.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('rate_limits', (t) => {
    t.string('key', 255).primary();
    t.integer('points').notNullable().defaultTo(0);
    t.bigInteger('expire').nullable();
    t.index(['expire'], 'rate_limits_expire_idx');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('rate_limits');
}
