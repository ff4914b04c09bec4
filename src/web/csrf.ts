import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Context, Next } from 'koa';
import { AppError } from '../errors.js';

/**
 * CSRF tokens bound to the session: every form carries `_csrf`, an HMAC (with the cookie keys)
 * of the signed-in session's id, or, before sign-in, of a random id in an HttpOnly cookie of its
 * own. A state-changing request whose token was not made for this very session is refused with
 * 403, so a token read from another session (another person's, or this browser's before it
 * signed in) is worth nothing. Signing in starts a new session and so a new token.
 */
const ID = /^[A-Za-z0-9_-]{20,64}$/;

export interface CsrfOptions {
  secure: boolean;
  /** The cookie keys, newest first: tokens are made with the first and accepted from any. */
  keys: string[];
  /** The name of the (signed) session cookie, whose value is the session id. */
  sessionCookie: string;
  /** The name of the pre-session id cookie. */
  csrfCookie: string;
}

function tokenFor(key: string, binding: string): string {
  return createHmac('sha256', key).update(`csrf\0${binding}`).digest('base64url');
}

export function csrfProtection(options: CsrfOptions) {
  const cookieOptions = { httpOnly: true, sameSite: 'lax' as const, secure: options.secure, overwrite: true, path: '/' };

  /** What the token is bound to: the session when there is one, else this browser's pre-session id. */
  function binding(ctx: Context): string {
    const sessionId = ctx.cookies.get(options.sessionCookie, { signed: true });
    if (sessionId && ID.test(sessionId)) return `session:${sessionId}`;
    let browserId = ctx.cookies.get(options.csrfCookie);
    if (!browserId || !/^[A-Za-z0-9_-]{43}$/.test(browserId)) {
      browserId = randomBytes(32).toString('base64url');
      ctx.cookies.set(options.csrfCookie, browserId, cookieOptions);
    }
    return `browser:${browserId}`;
  }

  return async function csrf(ctx: Context, next: Next): Promise<void> {
    const bound = binding(ctx);
    ctx.state.csrfToken = tokenFor(options.keys[0]!, bound);
    if (ctx.method === 'POST') {
      const sent = (ctx.request as { body?: Record<string, unknown> }).body?._csrf;
      if (typeof sent !== 'string' || !options.keys.some((key) => safeEqual(sent, tokenFor(key, bound)))) {
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
