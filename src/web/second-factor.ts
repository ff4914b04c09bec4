import type { Context } from 'koa';
import { cookieNames } from '../cookie-names.js';
import type { LoginRow, UserRow } from '../db/users.js';
import { AppError, RetryLaterError } from '../errors.js';
import { listPasskeys } from '../services/passkeys.js';
import { MAX_SECOND_FACTOR_TRIES, PENDING_SIGN_IN_MS } from '../services/pending-sign-ins.js';
import { verifySecondFactor, type SecondFactor } from '../services/two-factor.js';
import { signedInUserById } from '../services/users.js';
import type { WebDeps } from './context.js';
import { pageT } from '../i18n.js';
import { render } from './render.js';
import { SignedCookie } from './signed-cookie.js';

/**
 * The second step of a sign-in, for accounts with two-factor authentication on, in the site's
 * sign-in and the authorization flow's alike. A right password does not sign in: it starts a
 * sign-in waiting for its second factor, kept server-side (services/pending-sign-ins.ts) for five
 * minutes and bound to the account and to where it goes on (the site, or one flow by its uid);
 * the browser gets only its random id, in a signed cookie. Only a right code then signs in.
 *
 * Each code (or passkey answer) takes one of the sign-in's five tries before it is checked, so
 * codes sent at once are counted before any is checked; after the fifth wrong one the sign-in is
 * spent, its cookie cleared, and the person enters the password again. The account's sign-in
 * limits count second-factor failures too, across sign-ins and addresses.
 */
const PENDING_MS = PENDING_SIGN_IN_MS;

/** What the password page says when a waiting sign-in has used its tries. */
export const SPENT_MESSAGE = 'Too many wrong codes. Enter your password again to get new tries.';

/** Where the sign-in goes on: `site` for /login, a flow's uid for its interaction. */
export type SignInPlace = 'site' | { flow: string };

/** What the first step of a sign-in was: a password, or an upstream provider (`fed`). */
export type FirstFactor = 'pwd' | 'fed';

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

/** A try of the waiting sign-in, counted: the account it is for, and whether it is the last one. */
export interface SecondFactorTry {
  user: UserRow;
  last: boolean;
  /** Its code was not checked after all (a sign-in limit refused it): the try does not count. */
  uncount(): Promise<void>;
  /** Its code was right: the waiting sign-in ends. */
  done(): Promise<void>;
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

  /** How the waiting sign-in began: a password, or an upstream provider (`fed`), for its `amr`. */
  private firstFactorOf(ctx: Context): FirstFactor {
    return this.cookie.read(ctx)?.[1] === 'fed' ? 'fed' : 'pwd';
  }

  private idOf(ctx: Context): string | undefined {
    return this.cookie.read(ctx)?.[0] || undefined;
  }

  /**
   * After a right password: when the account has two-factor on (as the sign-in read it, with the
   * account), starts the waiting sign-in and returns true; the caller then sends the browser to
   * the page asking for the code. False: sign in now.
   */
  async needed(ctx: Context, user: LoginRow, place: SignInPlace, firstFactor: FirstFactor = 'pwd'): Promise<boolean> {
    if (!user.two_factor) {
      this.deps.metrics.signIn('success');
      return false;
    }
    this.cookie.set(ctx, [await this.deps.pendingSignIns.start(user.id, this.bound(place)), firstFactor]);
    this.deps.metrics.signIn('second_factor_needed');
    return true;
  }

  /** The account waiting for its second factor at `place`, if the sign-in is there, fresh and has tries left. */
  async waiting(ctx: Context, place: SignInPlace): Promise<UserRow | undefined> {
    const id = this.idOf(ctx);
    const userId = id && (await this.deps.pendingSignIns.waiting(id, this.bound(place)));
    return userId ? signedInUserById(this.deps.db, userId) : undefined;
  }

  /**
   * Takes one try of the sign-in waiting at `place`, before its code or passkey is checked.
   * 'spent': its tries are used up (the cookie is cleared; the password is asked again).
   * undefined: nothing waits there (expired, another browser, the account gone).
   */
  async takeTry(ctx: Context, place: SignInPlace): Promise<SecondFactorTry | 'spent' | undefined> {
    const id = this.idOf(ctx);
    if (!id) return undefined;
    const { pendingSignIns } = this.deps;
    const counted = await pendingSignIns.countTry(id, this.bound(place));
    if (counted === 'spent') {
      this.forget(ctx);
      return 'spent';
    }
    const user = counted && (await signedInUserById(this.deps.db, counted.userId));
    if (!counted || !user) return undefined;
    return {
      user,
      last: counted.tries >= MAX_SECOND_FACTOR_TRIES,
      uncount: () => pendingSignIns.uncountTry(id),
      done: async () => {
        await pendingSignIns.end(id);
        this.forget(ctx);
      },
    };
  }

  /** The page asking for the code (and offering a passkey, when the account has one). */
  async renderChallenge(ctx: Context, page: ChallengePage, error?: string, status = 200): Promise<void> {
    const id = this.idOf(ctx);
    const user = id && (await this.deps.pendingSignIns.waiting(id));
    const passkeys = user ? await listPasskeys(this.deps.db, user) : [];
    ctx.set('Cache-Control', 'no-store');
    render(ctx, 'two-factor-challenge', {
      title: pageT(ctx)('signin:twoFactor.title'),
      ...page,
      returnTo: page.returnTo ?? '',
      passkey: passkeys.length ? page.passkey : null,
      errors: error ? { code: error } : {},
    }, status);
  }

  /** The browser forgets the waiting sign-in. */
  forget(ctx: Context): void {
    this.cookie.clear(ctx);
  }

  /**
   * Checks the code of the waiting sign-in, its try counted first. Right: the sign-in ends and the
   * account and its methods are returned. Wrong (or refused by the limits): the page again, with
   * the reason, and 'failed'. 'spent': that was the last try, or none was left; the caller asks for
   * the password again (SPENT_MESSAGE). Nothing waiting (expired, or another browser): undefined,
   * and the caller starts over.
   */
  async verify(ctx: Context, place: SignInPlace, code: string, page: ChallengePage): Promise<{ user: UserRow; amr: string[] } | 'failed' | 'spent' | undefined> {
    const first = this.firstFactorOf(ctx);
    const attempt = await this.takeTry(ctx, place);
    if (!attempt || attempt === 'spent') return attempt;
    try {
      const factor = await verifySecondFactor(this.deps, attempt.user, code, ctx.ip);
      await attempt.done();
      this.deps.metrics.signIn('success');
      return { user: attempt.user, amr: [first, ...amrOf(factor).slice(1)] };
    } catch (err) {
      if (!(err instanceof AppError && (err.field === 'code' || err instanceof RetryLaterError))) throw err;
      this.deps.metrics.signIn(err instanceof RetryLaterError ? 'rate_limited' : 'second_factor_failed');
      if (err instanceof RetryLaterError) {
        await attempt.uncount();
        ctx.set('Retry-After', String(err.retryAfterS));
      } else if (attempt.last) {
        this.forget(ctx);
        return 'spent';
      }
      await this.renderChallenge(ctx, page, err.message, err.status);
      return 'failed';
    }
  }
}
