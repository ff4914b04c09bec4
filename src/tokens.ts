import { hash, randomInt, timingSafeEqual } from 'node:crypto';
import { crc32 } from 'node:zlib';

/**
 * Token formats: prefix + 30 random base62 characters + 6 base62 characters of
 * the CRC-32 of those 30, 39 characters in all. The checksum lets a scanner (and we) reject a
 * mistyped or invented value without touching storage.
 */
export const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

export type TokenPrefix = 'ho_' | 'hr_' | 'ha_' | 'hs_';
const RANDOM_LENGTH = 30;
const CHECKSUM_LENGTH = 6;
export const TOKEN_LENGTH = 3 + RANDOM_LENGTH + CHECKSUM_LENGTH;
const SHAPE = /^(ho|hr|ha|hs)_[0-9A-Za-z]{36}$/;

export function base62Checksum(body: string): string {
  let n = crc32(Buffer.from(body, 'ascii')) >>> 0;
  let out = '';
  for (let i = 0; i < CHECKSUM_LENGTH; i += 1) {
    out = BASE62[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

export function generateToken(prefix: TokenPrefix): string {
  let body = '';
  for (let i = 0; i < RANDOM_LENGTH; i += 1) body += BASE62[randomInt(62)];
  return prefix + body + base62Checksum(body);
}

/** The shape of a token of one prefix, checksum aside: what a schema can say about it. */
export function tokenPattern(prefix: TokenPrefix): RegExp {
  return new RegExp(`^${prefix}[0-9A-Za-z]{${RANDOM_LENGTH + CHECKSUM_LENGTH}}$`);
}

/** True when the value has a known prefix, the right length and alphabet, and a matching checksum. */
export function isWellFormedToken(value: string, prefix?: TokenPrefix): boolean {
  if (value.length !== TOKEN_LENGTH || !SHAPE.test(value)) return false;
  if (prefix && !value.startsWith(prefix)) return false;
  const body = value.slice(3, 3 + RANDOM_LENGTH);
  return value.slice(3 + RANDOM_LENGTH) === base62Checksum(body);
}

/**
 * Tokens and client secrets are high-entropy (178 bits), so one SHA-256 is a sufficient and fast
 * storage hash; only passwords need a slow KDF.
 */
export function digest(value: string): string {
  return hash('sha256', value, 'base64url');
}

export function digestEquals(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
