import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

/**
 * scrypt with its parameters stored beside the hash (`scrypt$N$r$p$salt$hash`), so they can be
 * raised later: an old hash still verifies with the parameters it was made with.
 */
const PARAMS = { N: 2 ** 15, r: 8, p: 1 };
const KEY_LENGTH = 32;
const MAX_MEMORY = 64 * 1024 * 1024;

function derive(password: string, salt: Buffer, N: number, r: number, p: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFKC'), salt, KEY_LENGTH, { N, r, p, maxmem: MAX_MEMORY }, (err, key) =>
      err ? reject(err) : resolve(key),
    );
  });
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, PARAMS.N, PARAMS.r, PARAMS.p);
  return ['scrypt', PARAMS.N, PARAMS.r, PARAMS.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !n || !r || !p || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  // A stored hash with parameters scrypt refuses is a corrupt row: it matches nothing.
  const actual = await derive(password, Buffer.from(salt, 'base64url'), Number(n), Number(r), Number(p)).catch(() => undefined);
  return !!actual && actual.length === expected.length && timingSafeEqual(actual, expected);
}

/** A hash of nothing, verified against when the user does not exist, so both cases take as long. */
let decoy: Promise<string> | undefined;
export function decoyHash(): Promise<string> {
  decoy ??= hashPassword(randomBytes(16).toString('hex'));
  return decoy;
}
