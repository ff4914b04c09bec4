import type { Context } from 'koa';
import { cookieNames } from '../cookie-names.js';
import type { UserRow } from '../db/users.js';
import { AppError, RetryLaterError } from '../errors.js';
import { hasTwoFactor, verifySecondFactor, type SecondFactor } from '../services/two-factor.js';
import { signedInUserById } from '../services/users.js';
import type { WebDeps } from './context.js';
import { render } from './render.js';

/**
 * The second step of a sign-in, for accounts with two-factor authentication on, in the site's
 * sign-in and the authorization flow's alike. A right password does not sign in: it leaves a
 * signed cookie naming the account and where the sign-in goes on (the site, or one flow by its
 * uid), valid five minutes, and shows the page asking for a code. Only a right code then signs in.
 * The cookie is signed with the cookie keys, so it cannot be made or moved to another account.
 */
const PENDING_MS = 5 * 60_000;

/** Where the sign-in goes on: `site` for /login, a flow's uid for its interaction. */
export type SignInPlace = 'site' | { flow: string };

/** RFC 8176 method references for what was used: a password, then an app code or a recovery code. */
export function amrOf(factor?: SecondFactor): string[] {
  if (!factor) return ['pwd'];
  return factor === 'otp' ? ['pwd', 'otp', 'mfa'] : ['pwd', 'mfa'];
}

export interface ChallengePage {
  /** Where the code form posts. */
  action: string;
  /** The site's return target, carried through the form. */
  returnTo?: string;
}

export class SecondFactorStep {
  private readonly cookie: string;
  private readonly secure: boolean;

  constructor(private readonly deps: WebDeps) {
    this.secure = deps.config.issuer.startsWith('https://');
    this.cookie = cookieNames(this.secure).secondFactor;
  }

  private bound(place: SignInPlace): string {
    return place === 'site' ? 'site' : `flow:${place.flow}`;
  }

  /**
   * After a right password: when the account has two-factor on, remembers the sign-in and returns
   * true; the caller then sends the browser to the page asking for the code. False: sign in now.
   */
  async needed(ctx: Context, user: UserRow, place: SignInPlace): Promise<boolean> {
    if (!(await hasTwoFactor(this.deps.db, user.id))) return false;
    const value = `${user.id}.${Date.now() + PENDING_MS}.${this.bound(place)}`;
    ctx.cookies.set(this.cookie, value, { httpOnly: true, sameSite: 'lax', secure: this.secure, signed: true, maxAge: PENDING_MS, overwrite: true });
    return true;
  }

  /** The account waiting for its second factor at `place`, if the cookie is there, genuine and fresh. */
  async waiting(ctx: Context, place: SignInPlace): Promise<UserRow | undefined> {
    const value = ctx.cookies.get(this.cookie, { signed: true });
    const [id, until, ...rest] = (value ?? '').split('.');
    if (!value || rest.join('.') !== this.bound(place) || !(Number(until) > Date.now())) return undefined;
    return signedInUserById(this.deps.db, Number(id));
  }

  renderChallenge(ctx: Context, page: ChallengePage, error?: string, status = 200): void {
    ctx.set('Cache-Control', 'no-store');
    render(ctx, 'two-factor-challenge', { title: 'Two-factor authentication', ...page, returnTo: page.returnTo ?? '', errors: error ? { code: error } : {} }, status);
  }

  /**
   * Checks the code of the waiting sign-in. Right: the cookie is spent and the account and its
   * methods are returned. Wrong (or too many tries): the page again, with the reason.
   * Nothing waiting (expired, or another browser): undefined, and the caller starts over.
   */
  async verify(ctx: Context, place: SignInPlace, code: string, page: ChallengePage): Promise<{ user: UserRow; amr: string[] } | 'failed' | undefined> {
    const user = await this.waiting(ctx, place);
    if (!user) return undefined;
    try {
      const factor = await verifySecondFactor(this.deps, user, code, ctx.ip);
      ctx.cookies.set(this.cookie, null, { httpOnly: true, sameSite: 'lax', secure: this.secure, signed: true, overwrite: true });
      return { user, amr: amrOf(factor) };
    } catch (err) {
      if (!(err instanceof AppError && (err.field === 'code' || err instanceof RetryLaterError))) throw err;
      if (err instanceof RetryLaterError) ctx.set('Retry-After', String(err.retryAfterS));
      this.renderChallenge(ctx, page, err.message, err.status);
      return 'failed';
    }
  }
}
