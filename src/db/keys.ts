import type { Knex } from 'knex';
import { now } from '../time.js';

/** Signing keys (private JWKs) and cookie keys; `material` is clear or sealed, as the provider decides. */
export type KeyKind = 'signing' | 'cookie';
export interface KeyRow {
  id: number;
  kind: KeyKind;
  material: string;
}

/**
 * Runs `work` in a transaction that holds the keys table for itself (a table lock on PostgreSQL;
 * SQLite serialises writers anyway), so instances starting at once agree on one set of keys.
 */
export function withKeysLocked<T>(db: Knex, work: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
  return db.transaction(async (trx) => {
    if (trx.client.config.client === 'pg') await trx.raw('lock table keys in exclusive mode');
    return work(trx);
  });
}

/** Every key, newest first. */
export function listKeys(db: Knex): Promise<KeyRow[]> {
  return db('keys').select('id', 'kind', 'material').orderBy('id', 'desc');
}

export async function insertKey(db: Knex, kind: KeyKind, material: string): Promise<void> {
  await db('keys').insert({ kind, material, created_at: now() });
}

export async function replaceKeyMaterial(db: Knex, id: number, material: string): Promise<void> {
  await db('keys').where({ id }).update({ material });
}
