import Router from '@koa/router';
import type { Context, Next } from 'koa';
import type { UserRow } from '../db/users.js';
import { AppError, RetryLaterError } from '../errors.js';
import { recentlyConfirmed, type SensitiveAction } from '../policies/account.js';
import { confirmPassword } from '../services/account.js';
import { checkPasskeySignIn, listPasskeys } from '../services/passkeys.js';
import { hasPassword } from '../services/passwords.js';
import { hasTwoFactor, verifySecondFactor } from '../services/two-factor.js';
import { requireUser, safeReturnTo, type WebDeps } from './context.js';
import type { PasskeyChallenges } from './passkey-routes.js';
import { render } from './render.js';
import { pageT } from '../i18n.js';

/**
 * Re-authentication ("sudo mode", as GitHub has it). A change that would let someone holding a
 * stolen session cookie keep or widen their access (see SensitiveAction) needs the password, a
 * second factor or a passkey given in this very session within the last ten minutes; signing in
 * counts. Without one, the change is not made: the person gets the **Confirm access** prompt,
 * and once they have confirmed, the change goes on.
 *
 * - A page that starts such a change (`page(action)`): a redirect to the prompt and back.
 * - A form that makes one (`required(action)`): the prompt is shown in the form's place. Its
 *   forms post to the original address with the original fields as hidden inputs (minus the CSRF
 *   token, which the prompt's page carries afresh, and minus anything secret: passwords and
 *   codes), plus the proof. A right proof is recorded for the session and the original handler
 *   runs on the same request, so nothing of the change is kept anywhere in between.
 *
 * Proofs are recorded per session (SiteSessions.confirmed): confirming in one browser unlocks
 * nothing in another. Wrong passwords count against the sign-in limits, wrong codes against the
 * second factor's, as at sign-in.
 */
export const CONFIRM_ACCESS = '/account/confirm-access';

/** The settings page a Cancel goes back to, for each change (the prompt says the change in words: account:purpose). */
const ACTIONS: Record<SensitiveAction, { page: string }> = {
  'add-passkey': { page: '/account/settings/passkeys' },
  'remove-passkey': { page: '/account/settings/passkeys' },
  'turn-on-two-factor': { page: '/account/settings/two-factor' },
  'turn-off-two-factor': { page: '/account/settings/two-factor' },
  'recovery-codes': { page: '/account/settings/two-factor' },
  'create-token': { page: '/account/settings/tokens' },
  'change-email': { page: '/account/settings/profile' },
  'delete-account': { page: '/account/settings/delete' },
  'link-sign-in-method': { page: '/account/settings/sign-in-methods' },
  'unlink-sign-in-method': { page: '/account/settings/sign-in-methods' },
  'set-password': { page: '/account/settings/sign-in-methods' },
};

function isSensitiveAction(value: unknown): value is SensitiveAction {
  return typeof value === 'string' && Object.hasOwn(ACTIONS, value);
}

/** The prompt's own fields, named so that they never meet a field of the form it continues. */
const PASSWORD = 'confirm_password';
const CODE = 'confirm_code';
const PASSKEY = 'confirm_passkey';
const PROOF_FIELDS = [PASSWORD, CODE, PASSKEY];

/** Never written into the prompt's page: the CSRF token (the page has its own) and anything secret. */
function isCarried(name: string): boolean {
  return name !== '_csrf' && !PROOF_FIELDS.includes(name) && !/password|(^|_)code$/i.test(name);
}

type Body = Record<string, unknown>;

function bodyOf(ctx: Context): Body {
  return ((ctx.request as { body?: Body }).body ?? {}) as Body;
}

/** The original form's fields to post again, in order, repeated fields (checkboxes) each value. */
function carriedFields(body: Body): Array<[string, string]> {
  const fields: Array<[string, string]> = [];
  for (const [name, value] of Object.entries(body)) {
    if (!isCarried(name)) continue;
    for (const one of Array.isArray(value) ? value : [value]) {
      if (typeof one === 'string') fields.push([name, one]);
    }
  }
  return fields;
}

type Proof = { field: typeof PASSWORD | typeof CODE | typeof PASSKEY; value: string };

/** The proof a prompt's form sent (its field is there, even empty), or undefined for any other form. */
function proofIn(body: Body): Proof | undefined {
  for (const field of [PASSWORD, CODE, PASSKEY] as const) {
    if (field in body) {
      const value = Array.isArray(body[field]) ? (body[field] as unknown[])[0] : body[field];
      return { field, value: typeof value === 'string' ? value : '' };
    }
  }
  return undefined;
}

/** Where a prompt's forms post, what they carry, and what the prompt is for. */
interface Prompt {
  action: SensitiveAction | undefined;
  target: string;
  carried: Array<[string, string]>;
}

export class AccessConfirmation {
  constructor(
    private readonly deps: WebDeps,
    private readonly passkeys: PasskeyChallenges,
  ) {}

  /** Whether the request's session proved its person (sign-in or confirmation) within the window. */
  async recent(ctx: Context): Promise<boolean> {
    return recentlyConfirmed(await this.deps.sessions.lastProof(ctx), Date.now());
  }

  /**
   * A form that asks for the password itself (or a code) got a right one: a proof for this
   * session. Its change is made already, so a failure to record the proof is logged, not thrown:
   * the person is asked again next time, and loses nothing (new recovery codes, say) now.
   */
  async record(ctx: Context): Promise<void> {
    await this.deps.sessions.confirmed(ctx).catch((err: unknown) => (ctx.state.log ?? this.deps.log).warn({ err }, 'recording a confirmation failed'));
  }

  /** Before a page that starts a sensitive change: without a recent proof, to the prompt and back. */
  page(action: SensitiveAction) {
    return async (ctx: Context, next: Next): Promise<void> => {
      requireUser(ctx);
      if (await this.recent(ctx)) return next();
      ctx.redirect(`${CONFIRM_ACCESS}?${new URLSearchParams({ for: action, return_to: ctx.originalUrl })}`);
    };
  }

  /**
   * Before a form's handler that makes a sensitive change: goes on with a recent proof, or with a
   * right one the prompt sent along (then recorded, and taken out of the form); else shows the
   * prompt, which posts the form again.
   */
  required(action: SensitiveAction) {
    return async (ctx: Context, next: Next): Promise<void> => {
      const user = requireUser(ctx);
      const body = bodyOf(ctx);
      const prompt: Prompt = { action, target: ctx.path, carried: carriedFields(body) };
      const proof = proofIn(body);
      if (proof) {
        if (!(await this.confirm(ctx, user, proof, prompt))) return;
        for (const field of PROOF_FIELDS) delete body[field];
        return next();
      }
      if (await this.recent(ctx)) return next();
      await this.renderPrompt(ctx, user, prompt, {}, 403);
    };
  }

  /**
   * Checks a proof: right, it is recorded for this session and true is returned; wrong (or too
   * many tries), the prompt is shown again with the reason and false is returned.
   */
  async confirm(ctx: Context, user: UserRow, proof: Proof, prompt: Prompt): Promise<boolean> {
    try {
      await this.check(ctx, user, proof);
    } catch (err) {
      if (!(err instanceof AppError && (err.field || err instanceof RetryLaterError))) throw err;
      if (err instanceof RetryLaterError) ctx.set('Retry-After', String(err.retryAfterS));
      await this.renderPrompt(ctx, user, prompt, { [proof.field]: err.message }, err.status);
      return false;
    }
    await this.deps.sessions.confirmed(ctx);
    return true;
  }

  private async check(ctx: Context, user: UserRow, proof: Proof): Promise<void> {
    if (proof.field === PASSWORD) {
      // As sign-in checks it: the same limits count a wrong one, and refuse past them.
      await confirmPassword(this.deps, user, proof.value, ctx.ip, PASSWORD);
      return;
    }
    if (proof.field === CODE) {
      if (!proof.value.trim()) throw new AppError(400, 'invalid_request', 'Enter the code your app shows, or a recovery code.', CODE);
      try {
        await verifySecondFactor(this.deps, user, proof.value, ctx.ip);
      } catch (err) {
        // The service names its own field (`code`); here the code is typed into the prompt's.
        if (err instanceof AppError && err.field === 'code') throw new AppError(err.status, err.code, err.message, CODE);
        throw err;
      }
      return;
    }
    const given = this.passkeys.take(ctx, 'confirm');
    if (!given || given.userId !== user.id) throw new AppError(400, 'invalid_request', 'The passkey request expired. Try again.', PASSKEY);
    // Counted as a second factor's answer is: the account's point is taken before it is verified.
    await checkPasskeySignIn({ ...this.passkeys.passkeys, limits: this.deps.limits }, { response: proof.value, challenge: given.challenge, userId: user.id }, ctx.ip, PASSKEY);
  }

  async renderPrompt(ctx: Context, user: UserRow, prompt: Prompt, errors: Record<string, string>, status: number): Promise<void> {
    const [twoFactor, passkeys] = await Promise.all([hasTwoFactor(this.deps.db, user.id), listPasskeys(this.deps.db, user.id)]);
    const about = prompt.action ? ACTIONS[prompt.action] : undefined;
    const t = pageT(ctx);
    render(ctx, 'account/confirm-access', {
      title: t('account:titles.confirmAccess'),
      // The change in the page's words (account:purpose, the English of ACTIONS).
      purpose: prompt.action ? t(`account:purpose.${prompt.action}`) : null,
      cancel: about?.page ?? '/account/settings',
      target: prompt.target,
      carried: prompt.carried,
      twoFactor,
      // An account made by an upstream sign-in may have no password to enter.
      password: hasPassword(user.password_hash),
      // The layout loads the passkey scripts when the page offers one.
      passkey: passkeys.length > 0,
      errors,
    }, status);
  }
}

/** The prompt as a page of its own (`?for=<action>&return_to=<path>`), for pages that start a sensitive change. */
export function confirmAccessRoutes(access: AccessConfirmation): Router {
  const router = new Router();

  router.get(CONFIRM_ACCESS, async (ctx) => {
    const user = requireUser(ctx);
    const action = isSensitiveAction(ctx.query.for) ? ctx.query.for : undefined;
    const returnTo = safeReturnTo(ctx.query.return_to, action ? ACTIONS[action].page : '/account/settings');
    if (await access.recent(ctx)) return ctx.redirect(returnTo);
    await access.renderPrompt(ctx, user, { action, target: CONFIRM_ACCESS, carried: [['for', action ?? ''], ['return_to', returnTo]] }, {}, 200);
  });

  router.post(CONFIRM_ACCESS, async (ctx) => {
    const user = requireUser(ctx);
    const body = bodyOf(ctx);
    const action = isSensitiveAction(body.for) ? body.for : undefined;
    const returnTo = safeReturnTo(body.return_to, action ? ACTIONS[action].page : '/account/settings');
    const prompt: Prompt = { action, target: CONFIRM_ACCESS, carried: [['for', action ?? ''], ['return_to', returnTo]] };
    const proof = proofIn(body) ?? { field: PASSWORD, value: '' };
    if (await access.confirm(ctx, user, proof, prompt)) ctx.redirect(returnTo);
  });

  return router;
}
