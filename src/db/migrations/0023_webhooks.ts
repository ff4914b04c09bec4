import type { Knex } from 'knex';

/**
 * Webhooks of a group, and the outbox their deliveries are sent from.
 *
 * `webhooks`: where a group's events are POSTed. `secret` signs each delivery (HMAC-SHA256); it
 * must be readable to sign with, so it is sealed with KEYS_SECRET like the signing keys (clear
 * only when no KEYS_SECRET is set, as the keys are). `events` is a JSON array of event names.
 *
 * `webhook_deliveries`: the outbox. A row is written in the same transaction as the change it
 * tells of, so no change goes untold and nothing is told of a change that was rolled back. It
 * keeps its own copy of the target URL and sealed secret, so the event of a deleted group is still
 * delivered after the group's webhooks went with it. `guid` is the X-Horizon-Delivery header
 * (a redelivery repeats it, so a receiver can recognize it). A sender claims a row by setting
 * `claimed_until` in the future (PostgreSQL: `FOR UPDATE SKIP LOCKED`), so any number of
 * instances send each row once; a claim left by an instance that stopped mid-delivery lapses and
 * the row is sent again.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('webhooks', (t) => {
    t.increments('id').primary();
    t.integer('group_id').unsigned().notNullable().references('id').inTable('groups').onDelete('CASCADE');
    t.text('url').notNullable();
    t.text('secret').notNullable();
    t.text('events').notNullable();
    t.boolean('active').notNullable().defaultTo(true);
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
    t.index(['group_id']);
  });
  await knex.schema.createTable('webhook_deliveries', (t) => {
    t.bigIncrements('id').primary();
    t.string('guid', 36).notNullable();
    t.integer('webhook_id').unsigned().nullable().references('id').inTable('webhooks').onDelete('SET NULL');
    t.integer('group_id').unsigned().notNullable();
    t.string('event', 40).notNullable();
    t.text('payload').notNullable();
    t.text('url').notNullable();
    t.text('secret').notNullable();
    t.boolean('redelivery').notNullable().defaultTo(false);
    // pending → delivered (a 2xx answer) or failed (no 2xx within the retry period).
    t.string('state', 10).notNullable().defaultTo('pending');
    t.integer('attempts').notNullable().defaultTo(0);
    t.timestamp('next_attempt_at', { useTz: true }).notNullable();
    t.timestamp('give_up_at', { useTz: true }).notNullable();
    t.timestamp('claimed_until', { useTz: true }).nullable();
    t.timestamp('last_attempt_at', { useTz: true }).nullable();
    t.integer('response_status').nullable();
    t.text('response_body').nullable();
    t.string('error', 200).nullable();
    t.integer('duration_ms').nullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.index(['state', 'next_attempt_at']);
    t.index(['webhook_id', 'id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('webhook_deliveries');
  await knex.schema.dropTable('webhooks');
}
