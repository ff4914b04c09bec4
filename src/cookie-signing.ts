import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The signer of signed cookies (`name.sig`), for Koa's and oidc-provider's `ctx.cookies`. It makes
 * exactly keygrip's signatures (HMAC-SHA1 of `name=value`, base64url), so cookies signed before
 * still verify and the first key signs while the others only verify (rotation). It differs in the
 * comparison: timingSafeEqual on the two signatures, where keygrip's tsscmp computes two more
 * HMACs under a fresh random key for every comparison. Every flow request reads several signed
 * cookies, so that was three HMACs and a random draw per cookie.
 */
export class CookieSigner {
  constructor(readonly keys: readonly string[]) {
    if (!keys.length) throw new Error('at least one cookie key is needed');
  }

  sign(data: string): string {
    return signature(data, this.keys[0]!);
  }

  verify(data: string, digest: string): boolean {
    return this.index(data, digest) > -1;
  }

  /** Which key signed `data` as `digest`, or -1. A signature of another length is not compared (every HMAC-SHA1 here has 27 characters). */
  index(data: string, digest: string): number {
    if (typeof digest !== 'string') return -1;
    const given = Buffer.from(digest);
    for (let i = 0; i < this.keys.length; i++) {
      const expected = Buffer.from(signature(data, this.keys[i]!));
      if (given.length === expected.length && timingSafeEqual(given, expected)) return i;
    }
    return -1;
  }
}

function signature(data: string, key: string): string {
  return createHmac('sha1', key).update(data).digest('base64url');
}
