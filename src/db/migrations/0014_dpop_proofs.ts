import type { Knex } from 'knex';

/**
 * `dpop_proofs`: the DPoP proofs the API has accepted, while they could still be replayed, when
 * the service has no Redis. `digest` (of the key's thumbprint and the proof's `jti`) is the
 * primary key, so of two requests carrying one proof, to any instances, only one can insert it;
 * `expires_at` (milliseconds since the epoch) is when the proof's `iat` falls out of the window
 * and the row may be pruned.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('dpop_proofs', (t) => {
    t.string('digest', 64).primary();
    t.bigInteger('expires_at').notNullable();
    t.index(['expires_at'], 'dpop_proofs_expires_idx');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('dpop_proofs');
}
