import type { Knex } from 'knex';

export const DPOP_PROOFS_TABLE = 'dpop_proofs';

/**
 * Records a proof's digest until `expiresAt` (ms); false when a row for it is already there and
 * still current. An expired row of the same digest (not yet pruned) is removed first, and the
 * insert itself is the check: of two at once, the primary key lets only one in.
 */
export async function claimDpopProof(db: Knex, digest: string, expiresAt: number): Promise<boolean> {
  await db(DPOP_PROOFS_TABLE).where({ digest }).andWhere('expires_at', '<=', Date.now()).del();
  const inserted = await db(DPOP_PROOFS_TABLE).insert({ digest, expires_at: expiresAt }).onConflict('digest').ignore().returning('digest');
  return inserted.length === 1;
}

/** Deletes the rows of proofs that can no longer be replayed; returns how many. */
export function pruneDpopProofs(db: Knex): Promise<number> {
  return db(DPOP_PROOFS_TABLE).where('expires_at', '<=', Date.now()).del();
}
