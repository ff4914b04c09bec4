import Router from '@koa/router';
import type { Context } from 'koa';
import type { UserRow } from '../db/users.js';
import {
  confirmTotp,
  disableTwoFactor,
  recoveryCodesSummary,
  regenerateRecoveryCodes,
  totpSetup,
  twoFactorStatus,
  type TwoFactorDeps,
} from '../services/two-factor.js';
import { mayAddCredentials } from '../policies/account.js';
import { groupClosedForTwoFactorAt } from '../services/groups.js';
import type { AccessConfirmation } from './confirm-access.js';
import { actorOf, formFields, requireUser, returnToQuery, safeReturnTo, type WebDeps } from './context.js';
import { formErrorsOrRetry, formStatus } from './form-errors.js';
import { flashBox } from './flash.js';
import { pageT } from '../i18n.js';
import { render } from './render.js';
import { noticeToOwner } from './security-notice.js';
import { refuseUnverified } from './verified-address.js';

/** Account settings → Two-factor authentication, where a group that requires it sends its members. */
export const TWO_FACTOR_SETTINGS = '/account/settings/two-factor';
const BASE = TWO_FACTOR_SETTINGS;

/**
 * The code fields of the two forms that take a code (Generate new recovery codes on
 * recovery-codes-status.ejs, Turn off on two-factor.ejs): each has a name of its own, so that an
 * error is said beside its own form.
 */
const REGENERATE_CODE = 'regenerate_code';
const DISABLE_CODE = 'disable_code';

/** The notices of the status page, as keys of its words (security namespace). */
const NOTICES: Record<string, string> = {
  disabled: 'security:twoFactor.disabled',
};

/** The headings of the page that shows new recovery codes once (the one-time flash carries which). */
const CODES_HEADINGS: Record<string, string> = {
  enabled: 'security:codes.enabledHeading',
  new: 'security:codes.newHeading',
};
const STATUS_VIEW = 'account/settings/two-factor';
const SETUP_VIEW = 'account/settings/two-factor-setup';

/**
 * Account settings → Two-factor authentication: set up an authenticator app from a QR code (or
 * its secret as text), confirmed by one code; then ten recovery codes, shown once; new recovery
 * codes and turning it off each need a fresh code (which is also this session's proof of its
 * person). Setting up needs a recent proof (Confirm access) and, where the site requires it, a
 * verified address. Each change is mailed to the owner.
 *
 * A group that requires two-factor authentication sends a member without it here with the page
 * they asked for in `return_to` (a path on this site only): the pages say which group asks, carry
 * the path through setting up, and lead back to it once it is on.
 */
export function twoFactorRoutes(deps: WebDeps, access: AccessConfirmation): Router {
  const router = new Router();
  const settings: TwoFactorDeps = { db: deps.db, limits: deps.limits, cipher: deps.cipher, issuerName: issuerName(deps) };

  /** Where to go back to once it is on, and which group asks for it (when one does). */
  async function returnOf(ctx: Context, given: unknown) {
    const returnTo = safeReturnTo(given, '');
    const groupName = returnTo ? await groupClosedForTwoFactorAt(deps.db, actorOf(ctx), returnTo) : undefined;
    return { returnTo, reason: groupName ? pageT(ctx)('security:twoFactor.reason', { group: groupName }) : null };
  }

  async function renderStatus(ctx: Context, user: UserRow, errors: Record<string, string> = {}, status = 200) {
    const t = pageT(ctx);
    const notice = Object.hasOwn(NOTICES, String(ctx.query.notice)) ? NOTICES[String(ctx.query.notice)] : undefined;
    render(ctx, STATUS_VIEW, {
      title: t('security:twoFactor.title'),
      tab: 'two-factor',
      ...(await returnOf(ctx, ctx.query.return_to)),
      status: await twoFactorStatus(deps.db, user.id),
      mayAdd: mayAddCredentials(user, deps.config.requireVerifiedEmail),
      errors,
      flash: notice ? t(notice) : null,
    }, status);
  }

  async function renderSetup(ctx: Context, user: UserRow, returnTo: unknown, errors: Record<string, string> = {}, status = 200) {
    render(ctx, SETUP_VIEW, {
      title: pageT(ctx)('security:setup.title'),
      tab: 'two-factor',
      ...(await returnOf(ctx, returnTo)),
      setup: await totpSetup(settings, user),
      errors,
      flash: null,
    }, status);
  }

  /** What is left of the codes, and the form that makes new ones. */
  async function renderCodesSummary(ctx: Context, user: UserRow, errors: Record<string, string> = {}, status = 200) {
    render(ctx, 'account/settings/recovery-codes-status', {
      title: pageT(ctx)('security:codes.title'),
      tab: 'two-factor',
      summary: await recoveryCodesSummary(deps.db, user.id),
      errors,
    }, status);
  }

  /** The codes go to the next page in the one-time flash: a reload shows them no more. `heading`: a key of CODES_HEADINGS. */
  function showCodesOnce(ctx: Context, user: UserRow, codes: string[], heading: keyof typeof CODES_HEADINGS, returnTo?: unknown) {
    flashBox(ctx).put({ for: codesFlashFor(user), secret: codes.join(' '), name: heading });
    ctx.redirect(`${BASE}/recovery-codes${returnToQuery(returnTo)}`);
  }

  function renderCodes(ctx: Context, codes: string[], heading: string | undefined) {
    const t = pageT(ctx);
    render(ctx, 'account/settings/recovery-codes', {
      title: t('security:codes.title'),
      tab: 'two-factor',
      heading: t(CODES_HEADINGS[heading ?? ''] ?? 'security:codes.heading'),
      // Saved, on to the page that asked for two-factor authentication (if one did).
      next: safeReturnTo(ctx.query.return_to, BASE),
      codes,
      download: `data:text/plain;charset=utf-8;base64,${Buffer.from(`${t('security:codes.fileFor', { username: requireUser(ctx).username })}\n\n${codes.join('\n')}\n`).toString('base64')}`,
      flash: null,
    });
  }

  router.get(BASE, async (ctx) => {
    await renderStatus(ctx, requireUser(ctx));
  });

  const unverified = refuseUnverified(deps, 'turn-on-two-factor');

  // Starting makes the secret; the set-up page then shows the same one until it is confirmed.
  router.post(`${BASE}/setup`, unverified, access.required('turn-on-two-factor'), async (ctx) => {
    const user = requireUser(ctx);
    const form = formFields(ctx);
    await totpSetup(settings, user, { restart: form.restart === '1' });
    ctx.redirect(`${BASE}/setup${returnToQuery(form.return_to)}`);
  });

  // The page shows the secret: a stolen session must not read it, nor turn it on with it.
  router.get(`${BASE}/setup`, unverified, access.page('turn-on-two-factor'), async (ctx) => {
    const user = requireUser(ctx);
    if ((await twoFactorStatus(deps.db, user.id)).enabled) return ctx.redirect(BASE);
    await renderSetup(ctx, user, ctx.query.return_to);
  });

  router.post(`${BASE}/setup/confirm`, unverified, access.required('turn-on-two-factor'), async (ctx) => {
    const user = requireUser(ctx);
    const form = formFields(ctx);
    try {
      const codes = await confirmTotp(settings, user, form.code ?? '', ctx.ip);
      noticeToOwner(deps, ctx, user, 'two-factor-enabled');
      showCodesOnce(ctx, user, codes, 'enabled', form.return_to);
    } catch (err) {
      const errors = formErrorsOrRetry(ctx, err, 'code', {});
      if (!errors) throw err;
      if ((await twoFactorStatus(deps.db, user.id)).enabled) return ctx.redirect(BASE);
      await renderSetup(ctx, user, form.return_to, errors, formStatus(err));
    }
  });

  // Right after they were made, the codes (once); after that, how many are left and when they were made.
  router.get(`${BASE}/recovery-codes`, async (ctx) => {
    const user = requireUser(ctx);
    const shown = flashBox(ctx).take(codesFlashFor(user));
    if (shown) return renderCodes(ctx, shown.secret.split(' '), shown.name);
    if (!(await twoFactorStatus(deps.db, user.id)).enabled) return ctx.redirect(BASE);
    await renderCodesSummary(ctx, user);
  });

  // The addresses the other forms post to, opened on their own: the page the forms are on.
  router.get([`${BASE}/setup/confirm`, `${BASE}/disable`], (ctx) => {
    requireUser(ctx);
    ctx.redirect(ctx.path.endsWith('/confirm') ? `${BASE}/setup` : BASE);
  });

  router.post(`${BASE}/recovery-codes`, async (ctx) => {
    const user = requireUser(ctx);
    try {
      const codes = await regenerateRecoveryCodes(settings, user, formFields(ctx)[REGENERATE_CODE] ?? '', ctx.ip);
      await access.record(ctx);
      noticeToOwner(deps, ctx, user, 'recovery-codes-replaced');
      showCodesOnce(ctx, user, codes, 'new');
    } catch (err) {
      const errors = formErrorsOrRetry(ctx, err, 'code', {});
      if (!errors) throw err;
      await renderCodesSummary(ctx, user, { [REGENERATE_CODE]: errors.code ?? '' }, formStatus(err));
    }
  });

  router.post(`${BASE}/disable`, async (ctx) => {
    const user = requireUser(ctx);
    try {
      await disableTwoFactor(settings, user, formFields(ctx)[DISABLE_CODE] ?? '', ctx.ip);
      await access.record(ctx);
      noticeToOwner(deps, ctx, user, 'two-factor-disabled');
      ctx.redirect(`${BASE}?notice=disabled`);
    } catch (err) {
      const errors = formErrorsOrRetry(ctx, err, 'code', {});
      if (!errors) throw err;
      await renderStatus(ctx, user, { [DISABLE_CODE]: errors.code ?? '' }, formStatus(err));
    }
  });

  return router;
}

const codesFlashFor = (user: UserRow) => `recovery-codes:${user.id}`;

/** The name the authenticator app shows beside the account: the issuer's host. */
function issuerName(deps: WebDeps): string {
  return `Horizon ID (${new URL(deps.config.issuer).host})`;
}
