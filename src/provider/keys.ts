import { createPrivateKey, generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import {
  deleteSigningKey,
  insertKey as insertKeyRow,
  listKeys,
  replaceKeyMaterial,
  signingKeysById,
  withKeysLocked,
  type KeyKind as Kind,
  type KeyRow,
} from '../db/keys.js';
import { AppError, NotFoundError } from '../errors.js';
import { isSealed, keyCipher, KeysSecretError, type KeyCipher } from '../key-encryption.js';
import { changing } from '../services/change-versions.js';
import { toIso } from '../time.js';
import { TTL } from '../vocabulary.js';

/**
 * Signing keys (JWKS) and cookie keys live in the database so that every instance signs and
 * verifies with the same ones. They are created on first start. Signing keys are rotated in two
 * phases: `idp keys rotate` adds a key that every instance publishes at once (and verifies with)
 * but that signs only from its `activeFrom`, KEY_ACTIVATION_DELAY_S later, when relying parties'
 * cached copies of the JWKS have expired; `idp keys retire` removes an old key once the tokens it
 * signed have expired. With KEYS_SECRET they are stored encrypted (key-encryption.ts), and the
 * first start that has the secret encrypts any stored in clear; without it (development) they
 * are stored in clear.
 */
export interface SigningKey {
  /** The row's id: what instances compare to notice a change without reading key material. */
  id: number;
  kid: string;
  /** The private JWK (RS256). */
  jwk: Record<string, unknown>;
  createdAt: string;
  activeFrom: string;
}

export interface ProviderKeys {
  /** Every signing key, newest first. */
  signing: SigningKey[];
  cookieKeys: string[];
}

/**
 * How long a token a key signed may still be accepted after the key stopped signing: the ID
 * token's lifetime (nothing the provider signs lives longer), plus an allowance for clocks that
 * differ between instances, the CLI and relying parties.
 */
export const SIGNED_TOKEN_LIFETIME_S = TTL.IdToken;
const CLOCK_ALLOWANCE_S = 300;

/**
 * The version in Redis (when there is one) replaced whenever a signing key is added or removed:
 * running instances read it before answering the JWKS, and so publish the change at once.
 */
export const SIGNING_KEYS_SUBJECT = 'keys:signing' as const;

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

function insertKey(db: Knex, kind: Kind, material: string, cipher: KeyCipher | undefined, activationDelayMs?: number): Promise<void> {
  return insertKeyRow(db, kind, cipher ? cipher.seal(kind, material) : material, activationDelayMs);
}

type OpenRow = KeyRow & { clear: string };

/** Every key in clear, newest first; clear rows sealed on the way when there is a secret. */
async function openAll(trx: Knex.Transaction, cipher: KeyCipher | undefined): Promise<OpenRow[]> {
  const rows = await listKeys(trx);
  if (!cipher) {
    if (rows.some((row) => isSealed(row.material))) throw new KeysSecretError(NEEDS_SECRET);
    return rows.map((row) => ({ ...row, clear: row.material }));
  }
  // Every sealed row must open before anything is written: a wrong secret changes nothing.
  const opened = rows.map((row) => ({ row, clear: isSealed(row.material) ? cipher.open(row.kind, row.material) : undefined }));
  for (const { row, clear } of opened) {
    if (clear === undefined) await replaceKeyMaterial(trx, row.id, cipher.seal(row.kind, row.material));
  }
  return opened.map(({ row, clear }) => ({ ...row, clear: clear ?? row.material }));
}

function signingKeyOf(row: OpenRow): SigningKey {
  const jwk = JSON.parse(row.clear) as Record<string, unknown>;
  const createdAt = toIso(row.created_at)!;
  return { id: row.id, kid: String(jwk.kid), jwk, createdAt, activeFrom: toIso(row.active_from) ?? createdAt };
}

/** The signing keys among `rows` (newest first), opened; a sealed one needs `cipher`. */
function openSigningRows(rows: KeyRow[], cipher: KeyCipher | undefined): SigningKey[] {
  return rows
    .filter((row) => row.kind === 'signing')
    .map((row) => {
      if (!isSealed(row.material)) return signingKeyOf({ ...row, clear: row.material });
      if (!cipher) throw new KeysSecretError(NEEDS_SECRET);
      return signingKeyOf({ ...row, clear: cipher.open(row.kind, row.material) });
    });
}

/** `cipher` is KEYS_SECRET's, when the caller has derived it already (it costs a fraction of a second). */
export async function loadOrCreateKeys(db: Knex, secret?: string, cipher = secret ? keyCipher(secret) : undefined): Promise<ProviderKeys> {
  const rows = await withKeysLocked(db, async (trx) => {
    let all = await openAll(trx, cipher);
    const kinds = new Set(all.map((r) => r.kind));
    if (kinds.has('signing') && kinds.has('cookie')) return all;
    // The first signing key signs at once: there is no other, and no relying party has cached any.
    if (!kinds.has('signing')) await insertKey(trx, 'signing', newSigningKey(), cipher);
    if (!kinds.has('cookie')) await insertKey(trx, 'cookie', randomBytes(32).toString('base64url'), cipher);
    all = await openAll(trx, cipher);
    return all;
  });
  return {
    signing: rows.filter((r) => r.kind === 'signing').map(signingKeyOf),
    cookieKeys: rows.filter((r) => r.kind === 'cookie').map((r) => r.clear),
  };
}

/** The signing keys with these row ids, opened (for an instance that noticed new rows); newest first. */
export async function readSigningKeys(db: Knex, ids: readonly number[], cipher: KeyCipher | undefined): Promise<SigningKey[]> {
  return ids.length ? openSigningRows(await signingKeysById(db, ids), cipher) : [];
}

/**
 * Adds a new signing key, published by every instance at once and signing from `activationDelayS`
 * seconds from now (0: as soon as each instance notices it); the old ones keep verifying. When no
 * key signs yet (a database no instance has started on), there is nothing to wait for: it signs at once.
 */
export async function rotateSigningKey(db: Knex, secret: string | undefined, activationDelayS: number): Promise<SigningKey> {
  const cipher = secret ? keyCipher(secret) : undefined;
  const material = newSigningKey();
  return changing(db, [SIGNING_KEYS_SUBJECT], () => withKeysLocked(db, async (trx) => {
    // The same secret as the stored keys, or none only when none is stored encrypted.
    const stored = (await openAll(trx, cipher)).filter((row) => row.kind === 'signing').map(signingKeyOf);
    const delayMs = signerAt(stored, Date.now()) ? activationDelayS * 1000 : 0;
    await insertKey(trx, 'signing', material, cipher, delayMs);
    const all = await openAll(trx, cipher);
    return signingKeyOf(all.find((row) => row.kind === 'signing' && row.clear === material)!);
  }));
}

/** The key that signs at `at` (ms): of those active by then, the one activated last (of equals, the newest). */
export function signerAt(keys: readonly SigningKey[], at: number): SigningKey | undefined {
  let signer: SigningKey | undefined;
  for (const key of keys) {
    const from = Date.parse(key.activeFrom);
    if (from > at) continue;
    if (!signer || from > Date.parse(signer.activeFrom) || (from === Date.parse(signer.activeFrom) && key.id > signer.id)) signer = key;
  }
  return signer;
}

/** The next moment after `at` when another key starts signing, if one is scheduled. */
export function nextActivation(keys: readonly SigningKey[], at: number): number | undefined {
  const pending = keys.map((key) => Date.parse(key.activeFrom)).filter((from) => from > at);
  return pending.length ? Math.min(...pending) : undefined;
}

/**
 * What the provider holds at `at`: the key that signs now first, then every other key newest
 * first, each marked verify-only (`key_ops: ['verify']`), so that only the first ever signs while
 * all of them are published and verify.
 */
export function keystoreSet(keys: readonly SigningKey[], at: number): { keys: Array<Record<string, unknown>>; signer: string | undefined } {
  const signer = signerAt(keys, at);
  const ordered = signer ? [signer, ...keys.filter((key) => key !== signer)] : [...keys];
  return {
    keys: ordered.map((key) => (key === signer ? { ...key.jwk } : { ...key.jwk, key_ops: ['verify'] })),
    signer: signer?.kid,
  };
}

export type SigningKeyState = 'pending' | 'signing' | 'previous';

export interface SigningKeyStatus {
  kid: string;
  createdAt: string;
  activeFrom: string;
  state: SigningKeyState;
  /** A previous key: when it stopped signing, and from when retiring it is safe (its tokens have expired). */
  signedUntil?: string;
  retirableFrom?: string;
}

/** Each key's place in the rotation at `at`, newest first. */
export function signingKeyStatuses(keys: readonly SigningKey[], at: number): SigningKeyStatus[] {
  const signer = signerAt(keys, at);
  return keys.map((key) => {
    const base = { kid: key.kid, createdAt: key.createdAt, activeFrom: key.activeFrom };
    if (key === signer) return { ...base, state: 'signing' };
    if (Date.parse(key.activeFrom) > at) return { ...base, state: 'pending' };
    const until = signedUntil(keys, key, at);
    return { ...base, state: 'previous', signedUntil: new Date(until).toISOString(), retirableFrom: new Date(until + (SIGNED_TOKEN_LIFETIME_S + CLOCK_ALLOWANCE_S) * 1000).toISOString() };
  });
}

/** When `key` (active, not the signer at `at`) was superseded: the first activation, by `at`, of a key ranked above it. */
function signedUntil(keys: readonly SigningKey[], key: SigningKey, at: number): number {
  const from = Date.parse(key.activeFrom);
  const later = keys
    .filter((other) => other !== key)
    .map((other) => ({ other, otherFrom: Date.parse(other.activeFrom) }))
    .filter(({ other, otherFrom }) => otherFrom <= at && (otherFrom > from || (otherFrom === from && other.id > key.id)))
    .map(({ otherFrom }) => otherFrom);
  return Math.min(...later);
}

/** Every signing key with its state, newest first (opening them needs KEYS_SECRET when they are stored encrypted). */
export async function listSigningKeys(db: Knex, secret: string | undefined): Promise<SigningKeyStatus[]> {
  const cipher = secret ? keyCipher(secret) : undefined;
  const keys = openSigningRows(await listKeys(db), cipher);
  return signingKeyStatuses(keys, Date.now());
}

/**
 * Removes the signing key `kid`: every instance stops publishing it (and verifying with it). The
 * key that signs now is never removed; a previous key only once the tokens it signed have expired,
 * unless `force` (a key that leaked: its tokens must stop verifying now). A key not yet signing
 * may always go (the rotation that added it is called off).
 */
export async function retireSigningKey(db: Knex, secret: string | undefined, kid: string, { force = false } = {}): Promise<SigningKeyStatus> {
  const cipher = secret ? keyCipher(secret) : undefined;
  return changing(db, [SIGNING_KEYS_SUBJECT], () => withKeysLocked(db, async (trx) => {
    const keys = (await openAll(trx, cipher)).filter((row) => row.kind === 'signing').map(signingKeyOf);
    const at = Date.now();
    const status = signingKeyStatuses(keys, at).find((s) => s.kid === kid);
    if (!status) throw new NotFoundError(`no signing key ${JSON.stringify(kid)} (idp keys list shows them)`);
    if (status.state === 'signing') {
      throw new AppError(409, 'conflict', `signing key ${kid} signs tokens now: rotate first (idp keys rotate), then retire it once the new key signs and its tokens have expired`);
    }
    if (status.state === 'previous' && !force && Date.parse(status.retirableFrom!) > at) {
      throw new AppError(409, 'conflict', `signing key ${kid} signed tokens until ${status.signedUntil} that may still be valid: retire it from ${status.retirableFrom}, or now with --force (those tokens then fail verification)`);
    }
    await deleteSigningKey(trx, keys.find((key) => key.kid === kid)!.id);
    return status;
  }));
}
