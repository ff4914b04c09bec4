import type { Knex } from 'knex';

/**
 * `pending_sign_ins`: sign-ins whose password was right and that wait for their second factor,
 * when the service has no Redis. The browser holds a random id; the row is found by its SHA-256
 * `digest`. `place` is where the sign-in goes on (`site`, or `flow:<uid>`), `tries` how many
 * codes were tried (counted by one conditional update before each is checked), `expires_at`
 * (milliseconds since the epoch) when it ends and may be pruned.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('pending_sign_ins', (t) => {
    t.string('digest', 64).primary();
    t.integer('user_id').unsigned().notNullable().references('id').inTable('users').onDelete('CASCADE');
    t.string('place', 255).notNullable();
    t.integer('tries').notNullable().defaultTo(0);
    t.bigInteger('expires_at').notNullable();
    t.index(['expires_at'], 'pending_sign_ins_expires_idx');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('pending_sign_ins');
}
