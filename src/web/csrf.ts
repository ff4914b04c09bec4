import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Context, Next } from 'koa';
import { AppError } from '../errors.js';

/**
 * Double-submit CSRF protection: a random value in an HttpOnly, SameSite=Lax cookie, repeated in a
 * hidden `_csrf` field of every form; a state-changing request whose field does not match is
 * refused with 403. It works before sign-in too (the sign-in and sign-up forms).
 */
const COOKIE = 'idp_csrf';

export function csrfProtection(secure: boolean) {
  return async function csrf(ctx: Context, next: Next): Promise<void> {
    let token = ctx.cookies.get(COOKIE);
    if (!token || !/^[A-Za-z0-9_-]{43}$/.test(token)) {
      token = randomBytes(32).toString('base64url');
      ctx.cookies.set(COOKIE, token, { httpOnly: true, sameSite: 'lax', secure, overwrite: true });
    }
    ctx.state.csrfToken = token;
    if (ctx.method === 'POST') {
      const sent = (ctx.request as { body?: Record<string, unknown> }).body?._csrf;
      if (typeof sent !== 'string' || !safeEqual(sent, token)) {
        throw new AppError(403, 'csrf', 'This form has expired or did not come from this site. Go back, reload the page and try again.');
      }
    }
    await next();
  };
}

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
