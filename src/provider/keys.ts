import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { now } from '../db/time.js';

/**
 * Signing keys (JWKS) and cookie keys live in the database so that every instance signs and
 * verifies with the same ones. They are created on first start; `idp keys rotate` adds a new
 * signing key in front and keeps the old ones published for verification.
 */
export interface ProviderKeys {
  jwks: { keys: Array<Record<string, unknown>> };
  cookieKeys: string[];
}

function newSigningKey(): string {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = privateKey.export({ format: 'jwk' });
  return JSON.stringify({ ...jwk, kid: randomUUID(), alg: 'RS256', use: 'sig' });
}

async function insertKey(db: Knex, kind: 'signing' | 'cookie', material: string): Promise<void> {
  await db('keys').insert({ kind, material, created_at: now() });
}

export async function loadOrCreateKeys(db: Knex): Promise<ProviderKeys> {
  // Serialised through a transaction so that two instances starting at once create one set.
  await db.transaction(async (trx) => {
    if (trx.client.config.client === 'pg') await trx.raw('lock table keys in exclusive mode');
    const kinds = new Set((await trx('keys').distinct('kind')).map((r: { kind: string }) => r.kind));
    if (!kinds.has('signing')) await insertKey(trx, 'signing', newSigningKey());
    if (!kinds.has('cookie')) await insertKey(trx, 'cookie', randomBytes(32).toString('base64url'));
  });
  const rows: Array<{ kind: string; material: string }> = await db('keys').select('kind', 'material').orderBy('id', 'desc');
  return {
    jwks: { keys: rows.filter((r) => r.kind === 'signing').map((r) => JSON.parse(r.material)) },
    cookieKeys: rows.filter((r) => r.kind === 'cookie').map((r) => r.material),
  };
}

/** Adds a new signing key; it signs from the next start of each instance, the old ones keep verifying. */
export async function rotateSigningKey(db: Knex): Promise<{ kid: string }> {
  const material = newSigningKey();
  await insertKey(db, 'signing', material);
  return { kid: JSON.parse(material).kid };
}
