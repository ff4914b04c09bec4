import type { Knex } from 'knex';

/** Signing keys (private JWKs) and cookie keys; `material` is clear or sealed, as the provider decides. */
export type KeyKind = 'signing' | 'cookie';
export interface KeyRow {
  id: number;
  kind: KeyKind;
  material: string;
  created_at: Date | string;
  /** From when a signing key may sign (null on a row written by a version without the column: from its creation). */
  active_from: Date | string | null;
}

/** What instances watch of the signing keys: ids and activation times, never the key material. */
export interface SigningKeyStamp {
  id: number;
  active_from: Date | string | null;
  created_at: Date | string;
}

const COLUMNS = ['id', 'kind', 'material', 'created_at', 'active_from'] as const;

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
  return db('keys').select(...COLUMNS).orderBy('id', 'desc');
}

/** The signing keys' ids and times, newest first: the light read an instance repeats every few seconds. */
export function listSigningKeyStamps(db: Knex): Promise<SigningKeyStamp[]> {
  return db('keys').where({ kind: 'signing' }).select('id', 'active_from', 'created_at').orderBy('id', 'desc');
}

/** The signing keys with these ids (those that still exist). */
export function signingKeysById(db: Knex, ids: readonly number[]): Promise<KeyRow[]> {
  return db('keys').where({ kind: 'signing' }).whereIn('id', ids).select(...COLUMNS).orderBy('id', 'desc');
}

/** Adds a key; a signing key signs from `activationDelayMs` after its creation (by default at once). */
export async function insertKey(db: Knex, kind: KeyKind, material: string, activationDelayMs = 0): Promise<void> {
  const created = Date.now();
  await db('keys').insert({ kind, material, created_at: new Date(created).toISOString(), active_from: new Date(created + activationDelayMs).toISOString() });
}

export async function replaceKeyMaterial(db: Knex, id: number, material: string): Promise<void> {
  await db('keys').where({ id }).update({ material });
}

/** Removes one signing key; whether it existed. */
export async function deleteSigningKey(db: Knex, id: number): Promise<boolean> {
  return (await db('keys').where({ id, kind: 'signing' }).del()) > 0;
}
