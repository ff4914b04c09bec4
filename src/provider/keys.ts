import { createPrivateKey, generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { insertKey as insertKeyRow, listKeys, replaceKeyMaterial, withKeysLocked, type KeyKind as Kind } from '../db/keys.js';
import { isSealed, keyCipher, KeysSecretError, type KeyCipher } from '../key-encryption.js';

/**
 * Signing keys (JWKS) and cookie keys live in the database so that every instance signs and
 * verifies with the same ones. They are created on first start; `idp keys rotate` adds a new
 * signing key in front and keeps the old ones published for verification. With KEYS_SECRET
 * they are stored encrypted (key-encryption.ts), and the first start that has the secret
 * encrypts any stored in clear; without it (development) they are stored in clear.
 */
export interface ProviderKeys {
  jwks: { keys: Array<Record<string, unknown>> };
  cookieKeys: string[];
}

const NEEDS_SECRET =
  'the signing and cookie keys in the database are encrypted: set KEYS_SECRET to the secret they were encrypted with';

function newSigningKey(): string {
  // Generated as PEM and read back as a key of its own before the JWK export: exporting the
  // generator's own key object can deadlock Node 20 (the export holds the key's lock, allocates,
  // and a garbage collection that runs then finalizes the generation job, which takes that lock).
  const { privateKey: pem } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  const jwk = createPrivateKey(pem).export({ format: 'jwk' });
  return JSON.stringify({ ...jwk, kid: randomUUID(), alg: 'RS256', use: 'sig' });
}

function insertKey(db: Knex, kind: Kind, material: string, cipher: KeyCipher | undefined): Promise<void> {
  return insertKeyRow(db, kind, cipher ? cipher.seal(kind, material) : material);
}

/** Every key in clear, newest first; clear rows sealed on the way when there is a secret. */
async function openAll(trx: Knex.Transaction, cipher: KeyCipher | undefined): Promise<Array<{ kind: Kind; material: string }>> {
  const rows = await listKeys(trx);
  if (!cipher) {
    if (rows.some((row) => isSealed(row.material))) throw new KeysSecretError(NEEDS_SECRET);
    return rows;
  }
  // Every sealed row must open before anything is written: a wrong secret changes nothing.
  const opened = rows.map((row) => ({ row, clear: isSealed(row.material) ? cipher.open(row.kind, row.material) : undefined }));
  for (const { row, clear } of opened) {
    if (clear === undefined) await replaceKeyMaterial(trx, row.id, cipher.seal(row.kind, row.material));
  }
  return opened.map(({ row, clear }) => ({ kind: row.kind, material: clear ?? row.material }));
}

/** `cipher` is KEYS_SECRET's, when the caller has derived it already (it costs a fraction of a second). */
export async function loadOrCreateKeys(db: Knex, secret?: string, cipher = secret ? keyCipher(secret) : undefined): Promise<ProviderKeys> {
  const rows = await withKeysLocked(db, async (trx) => {
    let all = await openAll(trx, cipher);
    const kinds = new Set(all.map((r) => r.kind));
    if (kinds.has('signing') && kinds.has('cookie')) return all;
    if (!kinds.has('signing')) await insertKey(trx, 'signing', newSigningKey(), cipher);
    if (!kinds.has('cookie')) await insertKey(trx, 'cookie', randomBytes(32).toString('base64url'), cipher);
    all = await openAll(trx, cipher);
    return all;
  });
  return {
    jwks: { keys: rows.filter((r) => r.kind === 'signing').map((r) => JSON.parse(r.material)) },
    cookieKeys: rows.filter((r) => r.kind === 'cookie').map((r) => r.material),
  };
}

/** Adds a new signing key; it signs from the next start of each instance, the old ones keep verifying. */
export async function rotateSigningKey(db: Knex, secret?: string): Promise<{ kid: string }> {
  const cipher = secret ? keyCipher(secret) : undefined;
  const material = newSigningKey();
  await withKeysLocked(db, async (trx) => {
    // The same secret as the stored keys, or none only when none is stored encrypted.
    await openAll(trx, cipher);
    await insertKey(trx, 'signing', material, cipher);
  });
  return { kid: JSON.parse(material).kid };
}
