import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import { hash, verify, type Algorithm } from '@node-rs/argon2';
import pLimit from 'p-limit';
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
 * Whether a hash that just verified should be replaced: any hash made before Argon2id. An
 * Argon2id hash verifies with the parameters it carries and is kept as it is.
 */
export function needsRehash(stored: string): boolean {
  return !stored.startsWith('$argon2id$');
}

const SCRYPT_KEY_LENGTH = 32;
const SCRYPT_MAX_MEMORY = 64 * 1024 * 1024;

async function verifyScrypt(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, expectedB64] = stored.split('$');
  if (scheme !== 'scrypt' || !n || !r || !p || !salt || !expectedB64) return false;
  const expected = Buffer.from(expectedB64, 'base64url');
  const actual = await new Promise<Buffer | undefined>((resolve) => {
    scrypt(password, Buffer.from(salt, 'base64url'), SCRYPT_KEY_LENGTH, { N: Number(n), r: Number(r), p: Number(p), maxmem: SCRYPT_MAX_MEMORY }, (err, key) =>
      resolve(err ? undefined : key),
    );
  });
  return !!actual && actual.length === expected.length && timingSafeEqual(actual, expected);
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
 * threads and memory that token exchanges and API calls need.
 */
export interface KdfQueue {
  run<T>(work: () => Promise<T>): Promise<T>;
}

export function kdfQueue(bound: { concurrency: number; queue: number }): KdfQueue {
  const limit = pLimit(bound.concurrency);
  return {
    run(work) {
      if (limit.activeCount >= bound.concurrency && limit.pendingCount >= bound.queue) {
        return Promise.reject(new RetryLaterError(503, 'busy', 'The server is busy checking other passwords. Try again in a few seconds.', 2));
      }
      return limit(work);
    },
  };
}
