import { randomBytes, scrypt, scryptSync, timingSafeEqual } from 'node:crypto';
import { hash, hashSync, verify, verifySync, type Algorithm } from '@node-rs/argon2';
import pLimit from 'p-limit';
import { Piscina } from 'piscina';
import { RetryLaterError } from '../errors.js';

/**
 * Password hashing: Argon2id at OWASP's parameters (m = 19 MiB, t = 2, p = 1), stored as the
 * standard PHC string (`$argon2id$v=19$m=19456,t=2,p=1$salt$hash`), so the parameters travel
 * with the hash and can be raised later. Hashes made before Argon2id (`scrypt$N$r$p$salt$hash`)
 * still verify, and `needsRehash` tells the sign-in to replace them.
 */
// Algorithm.Argon2id is a const enum (2), which isolated modules cannot read from the typings.
const ARGON2 = { algorithm: 2 as Algorithm.Argon2id, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

export async function hashPassword(password: string): Promise<string> {
  return hash(password.normalize('NFKC'), ARGON2);
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const normalized = password.normalize('NFKC');
  if (stored.startsWith('$argon2')) {
    // A corrupt or foreign hash string matches nothing.
    return verify(stored, normalized).catch(() => false);
  }
  return verifyScrypt(normalized, stored);
}

/**
 * The same two, computed on the calling thread: for the low-priority hashing threads (an async
 * hash would run on libuv's shared pool, whose threads the service needs for everything else).
 */
export function hashPasswordSync(password: string): string {
  return hashSync(password.normalize('NFKC'), ARGON2);
}

export function verifyPasswordSync(password: string, stored: string): boolean {
  const normalized = password.normalize('NFKC');
  if (stored.startsWith('$argon2')) {
    try {
      return verifySync(stored, normalized);
    } catch {
      return false;
    }
  }
  const parts = scryptParts(stored);
  if (!parts) return false;
  let actual: Buffer;
  try {
    actual = scryptSync(normalized, parts.salt, SCRYPT_KEY_LENGTH, { ...parts.params, maxmem: SCRYPT_MAX_MEMORY });
  } catch {
    return false;
  }
  return actual.length === parts.expected.length && timingSafeEqual(actual, parts.expected);
}

/**
 * Whether a hash that just verified should be replaced: any hash made before Argon2id. An
 * Argon2id hash verifies with the parameters it carries and is kept as it is.
 */
export function needsRehash(stored: string): boolean {
  return !stored.startsWith('$argon2id$');
}

const SCRYPT_KEY_LENGTH = 32;
const SCRYPT_MAX_MEMORY = 64 * 1024 * 1024;

/** `scrypt$N$r$p$salt$hash`, the format before Argon2id; undefined when the string is not one. */
function scryptParts(stored: string): { params: { N: number; r: number; p: number }; salt: Buffer; expected: Buffer } | undefined {
  const [scheme, n, r, p, salt, expected] = stored.split('$');
  if (scheme !== 'scrypt' || !n || !r || !p || !salt || !expected) return undefined;
  return { params: { N: Number(n), r: Number(r), p: Number(p) }, salt: Buffer.from(salt, 'base64url'), expected: Buffer.from(expected, 'base64url') };
}

async function verifyScrypt(password: string, stored: string): Promise<boolean> {
  const parts = scryptParts(stored);
  if (!parts) return false;
  const actual = await new Promise<Buffer | undefined>((resolve) => {
    scrypt(password, parts.salt, SCRYPT_KEY_LENGTH, { ...parts.params, maxmem: SCRYPT_MAX_MEMORY }, (err, key) => resolve(err ? undefined : key));
  });
  return !!actual && actual.length === parts.expected.length && timingSafeEqual(actual, parts.expected);
}

/** A hash of nothing, verified against when the user does not exist, so both cases take as long. */
let decoy: Promise<string> | undefined;
export function decoyHash(): Promise<string> {
  decoy ??= hashPassword(randomBytes(16).toString('hex'));
  return decoy;
}

/**
 * At most `concurrency` hashes run at once in this process and at most `queue` wait; past that a
 * request is refused at once with 503 and Retry-After, so a flood of sign-ins never takes the
 * threads and memory that token exchanges and API calls need. With `lowPriority`, the hashes run
 * on worker threads (piscina) at the lowest scheduling priority (nice +19): they get the CPU the
 * rest of the service leaves free, so a flood slows sign-ins, not everything else.
 */
export interface KdfQueue {
  /** Whether a hash asked for now would be refused (every slot busy, the queue full). */
  full(): boolean;
  /** Hashes running now and waiting their turn (for the metrics). */
  load(): { running: number; waiting: number };
  hash(password: string): Promise<string>;
  verify(password: string, stored: string): Promise<boolean>;
  close(): Promise<void>;
}

/** What a sign-in or sign-up gets while the queue is full. */
export function kdfBusy(): RetryLaterError {
  return new RetryLaterError(503, 'busy', 'The server is busy checking other passwords. Try again in a few seconds.', 2);
}

export type KdfTask = { op: 'hash'; password: string } | { op: 'verify'; password: string; stored: string };

export function kdfQueue(bound: { concurrency: number; queue: number }, options: { lowPriority?: boolean } = {}): KdfQueue {
  const limit = pLimit(bound.concurrency);
  const pool = options.lowPriority
    ? new Piscina<KdfTask, string | boolean>({
        // The worker is this folder's kdf-worker, compiled or not, as this file is.
        filename: new URL(import.meta.url.endsWith('.ts') ? './kdf-worker.ts' : './kdf-worker.js', import.meta.url).href,
        minThreads: 0,
        maxThreads: bound.concurrency,
        idleTimeout: 60_000,
        niceIncrement: process.platform === 'linux' || process.platform === 'darwin' ? 19 : 0,
      })
    : undefined;
  const full = () => limit.activeCount >= bound.concurrency && limit.pendingCount >= bound.queue;
  const run = <T>(task: KdfTask, inProcess: () => Promise<T>): Promise<T> => {
    if (full()) return Promise.reject(kdfBusy());
    return limit(() => (pool ? (pool.run(task) as Promise<T>) : inProcess()));
  };
  return {
    full,
    load: () => ({ running: limit.activeCount, waiting: limit.pendingCount }),
    hash: (password) => run({ op: 'hash', password }, () => hashPassword(password)),
    verify: (password, stored) => run({ op: 'verify', password, stored }, () => verifyPassword(password, stored)),
    close: async () => {
      await pool?.destroy();
    },
  };
}

/**
 * The stored hash of an account that has no password (made by signing in with an upstream
 * provider): a value no password verifies against (it is neither an Argon2 nor an scrypt hash),
 * random so that no two accounts share it. Setting a password, or a password reset, replaces it.
 */
export const NO_PASSWORD_PREFIX = 'none$';

export function noPasswordHash(): string {
  return `${NO_PASSWORD_PREFIX}${randomBytes(16).toString('base64url')}`;
}

export function hasPassword(stored: string): boolean {
  return !stored.startsWith(NO_PASSWORD_PREFIX);
}
