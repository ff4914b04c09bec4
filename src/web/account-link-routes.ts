import Router from '@koa/router';
import type { Context } from 'koa';
import type Provider from 'oidc-provider';
import { AppError, RetryLaterError } from '../errors.js';
import { pageLanguage, pageT } from '../i18n.js';
import { LinkRefusedError } from '../services/account-links.js';
import { requestPasswordReset, resetPassword, resetTarget } from '../services/password-reset.js';
import { resendVerification, verifyEmail } from '../services/verification.js';
import { formFields, requireUser, returnToQuery, safeReturnTo, seenFrom, type WebDeps } from './context.js';
import { formErrors, LABELS } from './form-errors.js';
import { RecoveryPass } from './recovery-routes.js';
import { render } from './render.js';

/**
 * The pages the mailed links lead to: verify an e-mail address (and ask for another link), and
 * "Forgot password?" with the reset page. Tokens travel in the query string or the form body,
 * never in a path, so they never reach a log line; every response already carries
 * `Referrer-Policy: no-referrer`, so a token in the address bar is not passed on either.
 */
export function accountLinkRoutes(deps: WebDeps & { provider: Provider }): Router {
  const router = new Router();
  // The page after the reset (recovery-routes.ts) lets this browser remove what else reaches the account.
  const recoveryPass = new RecoveryPass(deps.config.issuer.startsWith('https://'));

  router.get('/verify-email', async (ctx) => {
    const result = await explainRefusedLink(ctx, () => verifyEmail(deps.db, ctx.query.token));
    if (!result) return;
    if (!result.verified) {
      render(ctx, 'verify-email/outdated', { title: pageT(ctx)('signup:verify.outdatedTitle') }, 409);
      return;
    }
    ctx.redirect(`/verify-email/done${returnToQuery(ctx.query.return_to)}`);
  });

  // `return_to` on these pages: the authorization flow the person came from, where Continue leads.
  router.get('/verify-email/done', (ctx) => {
    render(ctx, 'verify-email/done', { title: pageT(ctx)('signup:verify.doneTitle'), returnTo: safeReturnTo(ctx.query.return_to, '/') });
  });

  router.post('/verify-email/resend', async (ctx) => {
    const user = requireUser(ctx);
    const form = formFields(ctx);
    const returnTo = safeReturnTo(form.return_to, '');
    // The mail in the language of the page that says it is sent.
    await resendVerification(deps, user, returnTo || undefined, pageLanguage(ctx));
    ctx.redirect(`/verify-email/sent${returnToQuery(returnTo)}`);
  });

  router.get('/verify-email/sent', (ctx) => {
    const user = requireUser(ctx);
    const returnTo = ctx.query.return_to ? safeReturnTo(ctx.query.return_to) : '';
    render(ctx, 'verify-email/sent', { title: pageT(ctx)('signup:checkInbox'), email: user.email, returnTo, hideVerifyBanner: true });
  });

  router.get('/forgot-password', (ctx) => {
    render(ctx, 'password-reset/forgot', { title: pageT(ctx)('signup:forgot.title'), returnTo: safeReturnTo(ctx.query.return_to, '') });
  });

  router.post('/forgot-password', async (ctx) => {
    const form = formFields(ctx);
    const values = { email: form.email ?? '' };
    const returnTo = safeReturnTo(form.return_to, '');
    try {
      // The mail in the language of the page it was asked from.
      await requestPasswordReset(deps, { email: values.email, ip: ctx.ip, returnTo: returnTo || undefined, lang: pageLanguage(ctx) });
    } catch (err) {
      if (!(err instanceof AppError && (err.field || err instanceof RetryLaterError))) throw err;
      if (err instanceof RetryLaterError) ctx.set('Retry-After', String(err.retryAfterS));
      render(ctx, 'password-reset/forgot', { title: pageT(ctx)('signup:forgot.title'), returnTo, values, errors: formErrors(err, LABELS.forgotPassword) ?? { email: err.message } }, err.status);
      return;
    }
    ctx.redirect(`/forgot-password/sent${returnToQuery(returnTo)}`);
  });

  router.get('/forgot-password/sent', (ctx) => {
    render(ctx, 'password-reset/sent', { title: pageT(ctx)('signup:checkInbox'), returnTo: safeReturnTo(ctx.query.return_to, '') });
  });

  router.get('/reset-password', async (ctx) => {
    if (!(await explainRefusedLink(ctx, () => resetTarget(deps.db, ctx.query.token)))) return;
    render(ctx, 'password-reset/reset', { title: pageT(ctx)('signup:reset.title'), token: String(ctx.query.token), returnTo: safeReturnTo(ctx.query.return_to, '') });
  });

  router.post('/reset-password', async (ctx) => {
    const form = formFields(ctx);
    const returnTo = safeReturnTo(form.return_to, '');
    const page = { title: pageT(ctx)('signup:reset.title'), token: form.token ?? '', returnTo };
    try {
      const reset = await resetPassword(deps, { token: form.token, password: form.password ?? '', confirmation: form.password_confirmation ?? '' }, seenFrom(ctx));
      recoveryPass.give(ctx, reset.user, reset.passwordHash, reset.cleared);
    } catch (err) {
      if (err instanceof LinkRefusedError) return renderRefusedLink(ctx, err);
      if (!(err instanceof AppError && (err.field || err instanceof RetryLaterError))) throw err;
      if (err instanceof RetryLaterError) ctx.set('Retry-After', String(err.retryAfterS));
      render(ctx, 'password-reset/reset', { ...page, errors: formErrors(err, LABELS.resetPassword) ?? { [err.field ?? 'password']: err.message } }, err.status);
      return;
    }
    ctx.redirect(`/reset-password/done${returnToQuery(returnTo)}`);
  });

  return router;
}

/** Runs `use`; a link that cannot be used gets its page instead, and undefined comes back. */
export async function explainRefusedLink<T>(ctx: Context, use: () => Promise<T>): Promise<T | undefined> {
  try {
    return await use();
  } catch (err) {
    if (!(err instanceof LinkRefusedError)) throw err;
    renderRefusedLink(ctx, err);
    return undefined;
  }
}

/** A clear page for a link that cannot be used, with the way to a new one. */
export function renderRefusedLink(ctx: Context, err: LinkRefusedError): void {
  // The page says the refusal by its reason, in the reader's language (the API's err.message is English).
  const t = pageT(ctx);
  render(ctx, 'link-refused', { title: t(`errors:linkRefused.titles.${err.reason}`), message: t(`errors:linkRefused.messages.${err.reason}`), purpose: err.purpose }, err.status);
}
