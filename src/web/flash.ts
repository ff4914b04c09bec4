import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import type { Context, Next } from 'koa';

/**
 * A one-time message from a POST to the page it redirects to (Post/Redirect/Get), for what must
 * be shown once and never put in a URL: a new client secret or access token. It travels in a
 * short-lived cookie, encrypted and authenticated (AES-256-GCM under a key derived from the
 * cookie keys, bound to this session's CSRF token), so the server stores nothing in clear; the
 * page that reads it clears it, so a reload shows it no more.
 */
export interface Flash {
  /** What it is for, e.g. "secret:<client id>": a page takes only its own. */
  for: string;
  secret: string;
  name?: string;
}

const TTL_MS = 5 * 60 * 1000;

export interface FlashBox {
  put(flash: Flash): void;
  take(forWhat: string): Flash | undefined;
}

function keyOf(cookieKey: string): Buffer {
  return createHmac('sha256', cookieKey).update('flash').digest();
}

export function oneTimeFlash(options: { keys: string[]; secure: boolean; cookie: string }) {
  const cookieOptions = { httpOnly: true, sameSite: 'lax' as const, secure: options.secure, overwrite: true, path: '/', maxAge: TTL_MS };

  function seal(flash: Flash, bound: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', keyOf(options.keys[0]!), iv).setAAD(Buffer.from(bound));
    const body = Buffer.concat([cipher.update(JSON.stringify({ ...flash, exp: Date.now() + TTL_MS })), cipher.final()]);
    return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
  }

  function open(sealed: string, bound: string): (Flash & { exp: number }) | undefined {
    const raw = Buffer.from(sealed, 'base64url');
    if (raw.length < 29) return undefined;
    for (const key of options.keys) {
      try {
        const decipher = createDecipheriv('aes-256-gcm', keyOf(key), raw.subarray(0, 12)).setAAD(Buffer.from(bound));
        decipher.setAuthTag(raw.subarray(12, 28));
        return JSON.parse(Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8')) as Flash & { exp: number };
      } catch {
        // Another key, another session's flash, or tampered with: try the next key.
      }
    }
    return undefined;
  }

  return async function flash(ctx: Context, next: Next): Promise<void> {
    const bound = String(ctx.state.csrfToken ?? '');
    const box: FlashBox = {
      put: (value) => ctx.cookies.set(options.cookie, seal(value, bound), cookieOptions),
      take: (forWhat) => {
        const sealed = ctx.cookies.get(options.cookie);
        if (!sealed) return undefined;
        const found = open(sealed, bound);
        if (!found || found.for !== forWhat) return undefined;
        ctx.cookies.set(options.cookie, null, { ...cookieOptions, maxAge: undefined });
        return found.exp > Date.now() ? { for: found.for, secret: found.secret, name: found.name } : undefined;
      },
    };
    ctx.state.flashBox = box;
    await next();
  };
}

export function flashBox(ctx: Context): FlashBox {
  const box = ctx.state.flashBox as FlashBox | undefined;
  if (!box) throw new Error('the one-time flash is not mounted');
  return box;
}
