import Router from '@koa/router';
import type { Context } from 'koa';
import { cookieNames } from '../cookie-names.js';
import type { UserRow } from '../db/users.js';
import { AppError, RetryLaterError } from '../errors.js';
import { parseId } from '../ids.js';
import { confirmPassword } from '../services/account.js';
import { hasPassword } from '../services/passwords.js';
import { addPasskey, authenticationOptions, CHALLENGE_MS, checkPasskeySignIn, listPasskeys, registrationOptions, removePasskey, type PasskeyDeps } from '../services/passkeys.js';
import { mayAddCredentials } from '../policies/account.js';
import { CONFIRM_ACCESS, type AccessConfirmation } from './confirm-access.js';
import { formFields, requireUser, safeReturnTo, type WebDeps } from './context.js';
import { noticeToOwner } from './security-notice.js';
import { refuseUnverified } from './verified-address.js';
import { toIso } from '../time.js';
import { pageT } from '../i18n.js';
import { render } from './render.js';
import { SecondFactorStep, SPENT_MESSAGE, type SignInPlace } from './second-factor.js';
import { renderSignIn } from './account-routes.js';
import { SignedCookie } from './signed-cookie.js';

/**
 * Passkeys in the pages. The browser asks `POST /passkeys/options` (a form post with the CSRF
 * token) for the options of what it is about to do (register, sign in, or answer as the second
 * factor); the challenge in them is kept in a signed five-minute cookie with that purpose and
 * account. The page's script (views/static/passkeys.js, with @simplewebauthn/browser) then posts
 * the authenticator's answer in an ordinary form, which is checked against that cookie.
 */
type Purpose = 'register' | 'sign-in' | 'second-factor' | 'confirm';

const SETTINGS = '/account/settings/passkeys';

/** The notices of the settings page, as keys of its words (security namespace). */
const NOTICES: Record<string, string> = {
  added: 'security:passkeys.addedNotice',
  removed: 'security:passkeys.removedNotice',
};
const SETTINGS_VIEW = 'account/settings/passkeys';

/** RFC 8176: a key held by an authenticator, with the person verified (PIN, biometrics) as a second factor. */
export function passkeyAmr(userVerified: boolean, afterPassword: boolean): string[] {
  if (afterPassword) return ['pwd', 'hwk', 'mfa'];
  return userVerified ? ['hwk', 'user', 'mfa'] : ['hwk'];
}

export class PasskeyChallenges {
  private readonly cookie: SignedCookie;
  readonly passkeys: PasskeyDeps;
  readonly secondFactor: SecondFactorStep;
  private readonly metrics: WebDeps['metrics'];
  private readonly limits: WebDeps['limits'];

  constructor(deps: WebDeps) {
    this.metrics = deps.metrics;
    this.limits = deps.limits;
    const secure = deps.config.issuer.startsWith('https://');
    this.cookie = new SignedCookie(cookieNames(secure).passkey, CHALLENGE_MS, secure);
    this.passkeys = { db: deps.db, issuer: deps.config.issuer };
    this.secondFactor = new SecondFactorStep(deps);
  }

  remember(ctx: Context, purpose: Purpose, userId: number | undefined, challenge: string): void {
    this.cookie.set(ctx, [purpose, userId === undefined ? '' : String(userId), challenge]);
  }

  /** The challenge given for `purpose` (and the account it was for), spent from the cookie. */
  take(ctx: Context, purpose: Purpose): { userId: number | undefined; challenge: string } | undefined {
    const [kind, userId, challenge] = this.cookie.read(ctx) ?? [];
    if (kind !== purpose || !challenge) return undefined;
    this.cookie.clear(ctx);
    return { userId: userId ? Number(userId) : undefined, challenge };
  }

  /**
   * A sign-in form's passkey answer (`response`): a sign-in with the passkey alone, or the second
   * factor of the sign-in waiting at `place`, which takes one of that sign-in's tries first. Both
   * count against the sign-in limits before the answer is verified. Returns the account and how
   * it signed in; otherwise renders `onFailure`'s page and returns undefined (`startOver`: the
   * waiting sign-in is spent, and the password page should say so).
   */
  async answer(
    ctx: Context,
    place: SignInPlace,
    response: string,
    onFailure: (message: string, status: number, startOver: boolean) => unknown,
  ): Promise<{ user: UserRow; amr: string[] } | undefined> {
    const waiting = await this.secondFactor.takeTry(ctx, place);
    if (waiting === 'spent') {
      await onFailure(SPENT_MESSAGE, 401, true);
      return undefined;
    }
    const given = this.take(ctx, waiting ? 'second-factor' : 'sign-in');
    if (!given || (waiting && given.userId !== waiting.user.id)) {
      await waiting?.uncount();
      await onFailure('The passkey request expired. Try again.', 400, false);
      return undefined;
    }
    try {
      const { user, userVerified } = await checkPasskeySignIn({ ...this.passkeys, limits: this.limits }, { response, challenge: given.challenge, userId: given.userId }, ctx.ip);
      await waiting?.done();
      this.metrics.signIn('success');
      return { user, amr: passkeyAmr(userVerified, Boolean(waiting)) };
    } catch (err) {
      if (!(err instanceof AppError && (err.field || err instanceof RetryLaterError))) throw err;
      if (err instanceof RetryLaterError) {
        await waiting?.uncount();
        this.metrics.signIn('rate_limited');
        ctx.set('Retry-After', String(err.retryAfterS));
      } else {
        this.metrics.signIn(waiting ? 'second_factor_failed' : 'passkey_failed');
      }
      if (waiting?.last && !(err instanceof RetryLaterError)) {
        this.secondFactor.forget(ctx);
        await onFailure(SPENT_MESSAGE, 401, true);
      } else {
        await onFailure(err.message, err.status, false);
      }
      return undefined;
    }
  }
}

export function passkeyRoutes(deps: WebDeps, access: AccessConfirmation): Router {
  const router = new Router();
  const challenges = new PasskeyChallenges(deps);

  router.post('/passkeys/options', async (ctx) => {
    const form = formFields(ctx);
    ctx.set('Cache-Control', 'no-store');
    try {
      if (form.purpose === 'register') {
        const user = requireUser(ctx);
        if (!mayAddCredentials(user, deps.config.requireVerifiedEmail)) {
          throw new AppError(403, 'email_not_verified', 'Verify your e-mail address before you add a passkey: follow the link we sent you.');
        }
        // No challenge for a session that has not proved its person lately: the page's script
        // sends the browser to the prompt, which comes back here.
        if (!(await access.recent(ctx))) {
          ctx.status = 403;
          ctx.body = { error: 'confirmation_required', error_description: 'Confirm your password first.', location: `${CONFIRM_ACCESS}?for=add-passkey&return_to=${encodeURIComponent(SETTINGS)}` };
          return;
        }
        const options = await registrationOptions(challenges.passkeys, user);
        challenges.remember(ctx, 'register', user.id, options.challenge);
        ctx.body = options;
        return;
      }
      if (form.purpose === 'confirm') {
        // The Confirm access prompt's passkey: one of this account's, as a second factor is.
        const user = requireUser(ctx);
        const options = await authenticationOptions(challenges.passkeys, user.id);
        challenges.remember(ctx, 'confirm', user.id, options.challenge);
        ctx.body = options;
        return;
      }
      if (form.purpose === 'sign-in') {
        const place: SignInPlace = form.uid ? { flow: form.uid } : 'site';
        const waiting = await challenges.secondFactor.waiting(ctx, place);
        const options = await authenticationOptions(challenges.passkeys, waiting?.id);
        challenges.remember(ctx, waiting ? 'second-factor' : 'sign-in', waiting?.id, options.challenge);
        ctx.body = options;
        return;
      }
      throw new AppError(400, 'invalid_request', 'purpose must be register, sign-in or confirm');
    } catch (err) {
      if (!(err instanceof AppError) || err instanceof RetryLaterError) throw err;
      ctx.status = err.status;
      ctx.body = { error: err.code, error_description: err.message };
    }
  });

  async function renderSettings(ctx: Context, user: UserRow, errors: Record<string, string> = {}, status = 200, values: Record<string, string> = {}) {
    const passkeys = await listPasskeys(deps.db, user.id);
    const t = pageT(ctx);
    const notice = String(ctx.query.notice ?? '');
    render(ctx, SETTINGS_VIEW, {
      title: t('security:passkeys.title'),
      tab: 'passkeys',
      passkeys: passkeys.map((p) => ({ id: p.id, name: p.name, createdAt: toIso(p.created_at), lastUsedAt: toIso(p.last_used_at) })),
      mayAdd: mayAddCredentials(user, deps.config.requireVerifiedEmail),
      // An account without a password confirms a removal through Confirm access, not in the form.
      password: hasPassword(user.password_hash),
      // Without a recent proof, Add leads to the Confirm access prompt first and back here.
      confirmFirst: (await access.recent(ctx)) ? null : `${CONFIRM_ACCESS}?for=add-passkey&return_to=${encodeURIComponent(SETTINGS)}`,
      errors,
      values,
      flash: Object.hasOwn(NOTICES, notice) ? t(NOTICES[notice]!) : null,
    }, status);
  }

  router.get(SETTINGS, async (ctx) => {
    await renderSettings(ctx, requireUser(ctx));
  });

  router.post(SETTINGS, refuseUnverified(deps, 'add-passkey'), access.required('add-passkey'), async (ctx) => {
    const user = requireUser(ctx);
    const form = formFields(ctx);
    const given = challenges.take(ctx, 'register');
    const name = form.name ?? '';
    try {
      if (!given || given.userId !== user.id) throw new AppError(400, 'invalid_request', 'The passkey request expired. Try again.', 'name');
      await addPasskey(challenges.passkeys, user, { name, response: form.response ?? '', challenge: given.challenge }, ctx.ip);
    } catch (err) {
      if (!(err instanceof AppError && err.field)) throw err;
      await renderSettings(ctx, user, { name: err.message }, err.status, { name });
      return;
    }
    noticeToOwner(deps, ctx, user, 'passkey-added', name.trim());
    ctx.redirect(`${SETTINGS}?notice=added`);
  });

  /** Removes the passkey of the address (its owner's proof already checked), or says why not. */
  async function remove(ctx: Context, user: UserRow, id: number): Promise<void> {
    let removed: { name: string };
    try {
      removed = await removePasskey(deps.db, user, id, ctx.ip);
    } catch (err) {
      // The last way into an account without a password is kept, and the page says why.
      if (!(err instanceof AppError && err.status === 409)) throw err;
      await renderSettings(ctx, user, { remove: err.message }, err.status);
      return;
    }
    noticeToOwner(deps, ctx, user, 'passkey-removed', removed.name);
    ctx.redirect(`${SETTINGS}?notice=removed`);
  }

  const passkeyId = (ctx: Context): number => {
    const id = parseId(ctx.params.id);
    if (id === undefined) throw new AppError(404, 'not_found', 'There is no such passkey.');
    return id;
  };

  // The form asks for the password itself: a right one is this session's proof too. An account
  // without a password (made by an upstream sign-in) goes through Confirm access instead.
  router.post(`${SETTINGS}/:id/remove`, async (ctx, next) => {
    const user = requireUser(ctx);
    const id = passkeyId(ctx);
    if (!hasPassword(user.password_hash)) return next();
    try {
      await confirmPassword(deps, user, formFields(ctx)[`password_${id}`] ?? '', ctx.ip, `password_${id}`);
    } catch (err) {
      if (!(err instanceof AppError && (err.field || err instanceof RetryLaterError))) throw err;
      if (err instanceof RetryLaterError) ctx.set('Retry-After', String(err.retryAfterS));
      await renderSettings(ctx, user, { [`password_${id}`]: err.message }, err.status);
      return;
    }
    await access.record(ctx);
    await remove(ctx, user, id);
  }, access.required('remove-passkey'), async (ctx) => {
    await remove(ctx, requireUser(ctx), passkeyId(ctx));
  });

  // The addresses the forms post to, opened on their own: the page the form is on.
  router.get(`${SETTINGS}/:id/remove`, (ctx) => {
    requireUser(ctx);
    ctx.redirect(SETTINGS);
  });
  router.get('/login/passkey', (ctx) => ctx.redirect('/login'));

  // The site's sign-in with a passkey: alone, or as the second factor after the password.
  router.post('/login/passkey', async (ctx) => {
    const form = formFields(ctx);
    const returnTo = safeReturnTo(form.return_to);
    const waiting = await challenges.secondFactor.waiting(ctx, 'site');
    const signedIn = await challenges.answer(ctx, 'site', form.response ?? '', (message, status, startOver) =>
      waiting && !startOver
        ? challenges.secondFactor.renderChallenge(ctx, { action: '/login/two-factor', returnTo, passkey: { action: '/login/passkey', uid: '' } }, message, status)
        : renderSignIn(ctx, returnTo, { login: message }, status),
    );
    if (!signedIn) return;
    await deps.sessions.signIn(ctx, signedIn.user.id, signedIn.amr);
    ctx.redirect(returnTo);
  });

  return router;
}
