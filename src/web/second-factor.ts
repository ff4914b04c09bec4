import type { Context } from 'koa';
import { cookieNames } from '../cookie-names.js';
import type { LoginRow, UserRow } from '../db/users.js';
import { AppError, RetryLaterError } from '../errors.js';
import { listPasskeys } from '../services/passkeys.js';
import { verifySecondFactor, type SecondFactor } from '../services/two-factor.js';
import { signedInUserById } from '../services/users.js';
import type { WebDeps } from './context.js';
import { render } from './render.js';
import { SignedCookie } from './signed-cookie.js';

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
  /** Where a passkey's answer posts, and the flow's uid for its options ('' on the site). */
  passkey: { action: string; uid: string };
}

export class SecondFactorStep {
  private readonly cookie: SignedCookie;

  constructor(private readonly deps: WebDeps) {
    const secure = deps.config.issuer.startsWith('https://');
    this.cookie = new SignedCookie(cookieNames(secure).secondFactor, PENDING_MS, secure);
  }

  private bound(place: SignInPlace): string {
    return place === 'site' ? 'site' : `flow:${place.flow}`;
  }

  /**
   * After a right password: when the account has two-factor on (as the sign-in read it, with the
   * account), remembers the sign-in and returns true; the caller then sends the browser to the
   * page asking for the code. False: sign in now.
   */
  needed(ctx: Context, user: LoginRow, place: SignInPlace): boolean {
    if (!user.two_factor) {
      this.deps.metrics.signIn('success');
      return false;
    }
    this.cookie.set(ctx, [String(user.id), this.bound(place)]);
    this.deps.metrics.signIn('second_factor_needed');
    return true;
  }

  /** The account waiting for its second factor at `place`, if the cookie is there, genuine and fresh. */
  async waiting(ctx: Context, place: SignInPlace): Promise<UserRow | undefined> {
    const [id, bound] = this.cookie.read(ctx) ?? [];
    if (!id || bound !== this.bound(place)) return undefined;
    return signedInUserById(this.deps.db, Number(id));
  }

  /** The page asking for the code (and offering a passkey, when the account has one). */
  async renderChallenge(ctx: Context, page: ChallengePage, error?: string, status = 200): Promise<void> {
    const user = this.cookie.read(ctx)?.[0];
    const passkeys = user ? await listPasskeys(this.deps.db, Number(user)) : [];
    ctx.set('Cache-Control', 'no-store');
    render(ctx, 'two-factor-challenge', {
      title: 'Two-factor authentication',
      ...page,
      returnTo: page.returnTo ?? '',
      passkey: passkeys.length ? page.passkey : null,
      errors: error ? { code: error } : {},
    }, status);
  }

  /** The waiting sign-in is done (by a passkey): its cookie goes. */
  forget(ctx: Context): void {
    this.cookie.clear(ctx);
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
      this.forget(ctx);
      this.deps.metrics.signIn('success');
      return { user, amr: amrOf(factor) };
    } catch (err) {
      if (!(err instanceof AppError && (err.field === 'code' || err instanceof RetryLaterError))) throw err;
      this.deps.metrics.signIn(err instanceof RetryLaterError ? 'rate_limited' : 'second_factor_failed');
      if (err instanceof RetryLaterError) ctx.set('Retry-After', String(err.retryAfterS));
      await this.renderChallenge(ctx, page, err.message, err.status);
      return 'failed';
    }
  }
}
