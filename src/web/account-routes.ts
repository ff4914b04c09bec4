import Router from '@koa/router';
import type { Context } from 'koa';
import type { LoginRow } from '../db/users.js';
import { AppError, RetryLaterError } from '../errors.js';
import { LinkRefusedError } from '../services/account-links.js';
import { AddressTakenError, completeSignUp, pendingSignUp, requestSignUp } from '../services/sign-up.js';
import { AccountDisabledError, DirectoryRefusedError, DirectoryUnavailableError, signIn } from '../services/users.js';
import { explainRefusedLink, renderRefusedLink } from './account-link-routes.js';
import { formFields, returnToQuery, safeReturnTo, seenFrom, type WebDeps } from './context.js';
import { flashBox } from './flash.js';
import { formErrorsOrRetry, formStatus, LABELS } from './form-errors.js';
import { pageLanguage, pageT, translateMessage, translator } from '../i18n.js';
import { render } from './render.js';
import { amrOf, SecondFactorStep, SPENT_MESSAGE } from './second-factor.js';

/** The site's second-step page: the code posts to /login/two-factor, a passkey to /login/passkey. */
function sitePage(returnTo: string) {
  return { action: '/login/two-factor', returnTo, passkey: { action: '/login/passkey', uid: '' } };
}

/** The site's sign-in page, with `errors` beside its fields. */
export function renderSignIn(ctx: Context, returnTo: string, errors: Record<string, string> = {}, status = 200): void {
  render(ctx, 'login', { title: pageT(ctx)('signin:title'), action: '/login', returnTo, errors, passkey: { action: '/login/passkey', uid: '' } }, status);
}

/** Sign up, sign in, sign out. */
export function accountRoutes(deps: WebDeps): Router {
  const router = new Router();
  const secondFactor = new SecondFactorStep(deps);

  // Someone signed out who opens the site has most likely come to sign in (Sign up is one link away there).
  router.get('/', (ctx) => {
    if (ctx.state.user) return ctx.redirect('/groups');
    ctx.status = 303;
    return ctx.redirect('/login');
  });

  router.get('/login', (ctx) => {
    if (ctx.state.user) return ctx.redirect(safeReturnTo(ctx.query.return_to));
    renderSignIn(ctx, safeReturnTo(ctx.query.return_to));
  });

  router.post('/login', async (ctx) => {
    const form = formFields(ctx);
    const page = { title: pageT(ctx)('signin:title'), action: '/login', returnTo: safeReturnTo(form.return_to), values: { login: form.login ?? '' }, passkey: { action: '/login/passkey', uid: '' } };
    const user = await signInOrExplain(ctx, deps, form, page);
    if (!user) return;
    const returnTo = safeReturnTo(form.return_to);
    if (await secondFactor.needed(ctx, user, 'site')) return ctx.redirect(`/login/two-factor?return_to=${encodeURIComponent(returnTo)}`);
    await deps.sessions.signIn(ctx, user.id, amrOf());
    ctx.redirect(returnTo);
  });

  router.get('/login/two-factor', async (ctx) => {
    if (!(await secondFactor.waiting(ctx, 'site'))) return ctx.redirect('/login');
    await secondFactor.renderChallenge(ctx, sitePage(safeReturnTo(ctx.query.return_to)));
  });

  router.post('/login/two-factor', async (ctx) => {
    const form = formFields(ctx);
    const page = sitePage(safeReturnTo(form.return_to));
    const passed = await secondFactor.verify(ctx, 'site', form.code ?? '', page);
    if (passed === 'failed') return;
    if (passed === 'spent') return renderSignIn(ctx, page.returnTo, { login: SPENT_MESSAGE }, 401);
    // Nothing waiting (the five minutes passed, or another browser): start again.
    if (!passed) return ctx.redirect('/login');
    await deps.sessions.signIn(ctx, passed.user.id, passed.amr);
    ctx.redirect(page.returnTo);
  });

  // `return_to`: an authorization flow's start (its sign-in page links here), where the new
  // account continues, signed in, to the consent page once the mailed link is followed.
  router.get('/signup', (ctx) => {
    requireOpenSignUp(deps);
    if (ctx.state.user) return ctx.redirect(safeReturnTo(ctx.query.return_to));
    render(ctx, 'signup', { title: pageT(ctx)('signup:form.title'), returnTo: safeReturnTo(ctx.query.return_to, ''), labels: LABELS.signup });
  });

  // Every sign-up that passes the form's checks gets this same answer, whether or not its address
  // already has an account: the mail says the rest (services/sign-up.ts).
  router.post('/signup', async (ctx) => {
    requireOpenSignUp(deps);
    const form = formFields(ctx);
    const values = { username: form.username ?? '', email: form.email ?? '', name: form.name ?? '' };
    const returnTo = safeReturnTo(form.return_to, '');
    try {
      const { email } = await requestSignUp(deps, { ...values, password: form.password ?? '' }, { from: seenFrom(ctx), returnTo: returnTo || undefined });
      flashBox(ctx).put({ for: 'signup-sent', secret: email });
      ctx.redirect(`/signup/sent${returnToQuery(returnTo)}`);
    } catch (err) {
      const errors = formErrorsOrRetry(ctx, err, 'username', LABELS.signup);
      if (!errors) throw err;
      render(ctx, 'signup', { title: pageT(ctx)('signup:form.title'), returnTo, values, errors, labels: LABELS.signup }, formStatus(err));
    }
  });

  // The address typed rides in a one-time flash, never in the URL; a reload shows the page without it.
  router.get('/signup/sent', (ctx) => {
    const sentTo = flashBox(ctx).take('signup-sent')?.secret ?? '';
    render(ctx, 'signup/sent', { title: pageT(ctx)('signup:checkInbox'), email: sentTo, returnTo: safeReturnTo(ctx.query.return_to, '') });
  });

  // The mailed link: the password chosen at sign-up makes the account, which is signed in here.
  router.get('/signup/confirm', async (ctx) => {
    requireOpenSignUp(deps);
    const pending = await explainRefusedLink(ctx, () => pendingSignUp(deps.db, ctx.query.token));
    if (!pending) return;
    renderConfirm(ctx, { token: String(ctx.query.token), email: pending.email, returnTo: safeReturnTo(ctx.query.return_to, ''), values: { username: pending.username } });
  });

  router.post('/signup/confirm', async (ctx) => {
    requireOpenSignUp(deps);
    const form = formFields(ctx);
    const returnTo = safeReturnTo(form.return_to, '');
    let user;
    try {
      user = await completeSignUp(deps, { token: form.token, username: form.username ?? '', password: form.password ?? '' });
    } catch (err) {
      if (err instanceof LinkRefusedError) return renderRefusedLink(ctx, err);
      if (err instanceof AddressTakenError) {
        const lang = pageLanguage(ctx);
        render(ctx, 'signup/address-taken', { title: translator(lang)('signup:addressTaken.title'), message: translateMessage(err.message, lang), returnTo }, err.status);
        return;
      }
      const errors = formErrorsOrRetry(ctx, err, 'password', LABELS.signupConfirm);
      if (!errors) throw err;
      const pending = await explainRefusedLink(ctx, () => pendingSignUp(deps.db, form.token));
      if (!pending) return;
      renderConfirm(ctx, { token: form.token ?? '', email: pending.email, returnTo, values: { username: form.username ?? '' }, errors }, formStatus(err));
      return;
    }
    await deps.sessions.signIn(ctx, user.id);
    ctx.redirect(returnTo || '/groups');
  });

  function renderConfirm(ctx: Context, page: { token: string; email: string; returnTo: string; values: Record<string, string>; errors?: Record<string, string> }, status = 200) {
    render(ctx, 'signup/confirm', { title: pageT(ctx)('signup:confirm.title'), labels: LABELS.signupConfirm, hideVerifyBanner: true, ...page }, status);
  }

  // A typed or bookmarked /logout gets the same "Sign out of Horizon ID?" page as the OAuth
  // sign-out (its buttons post); a GET itself signs nobody out.
  router.get('/logout', (ctx) => {
    ctx.status = 303;
    ctx.redirect('/login/oauth/logout');
  });

  router.post('/logout', async (ctx) => {
    await deps.sessions.signOut(ctx);
    ctx.redirect('/login');
  });

  return router;
}

function requireOpenSignUp(deps: WebDeps): void {
  if (deps.config.signup !== 'open') throw new AppError(404, 'not_found', 'Sign-up is closed on this server. Ask an administrator for an account.');
}

/**
 * Runs a password sign-in for a sign-in form (the site's or the authorization flow's) and, when it
 * fails, re-renders that form with the reason: wrong credentials (401), a disabled account (403,
 * said only after the right password), or too many attempts (429) or a busy server (503), both
 * with Retry-After. Returns the user on success.
 */
export async function signInOrExplain(
  ctx: Context,
  deps: WebDeps,
  form: Record<string, string>,
  page: { title: string } & Record<string, unknown>,
): Promise<LoginRow | undefined> {
  if (!deps.config.passwordSignIn) {
    render(ctx, 'login', { ...page, errors: { login: 'Signing in with a password is turned off on this server. Use a passkey or one of the sign-in providers below.' } }, 403);
    return undefined;
  }
  try {
    const user = await signIn(deps, { login: form.login ?? '', password: form.password ?? '', ip: ctx.ip });
    // A right password is counted once the second step is known (SecondFactorStep.needed).
    if (user) return user;
    deps.metrics.signIn('wrong_password');
    render(ctx, 'login', { ...page, errors: { login: 'Incorrect username, email or password.' } }, 401);
  } catch (err) {
    if (!(err instanceof RetryLaterError || err instanceof AccountDisabledError || err instanceof DirectoryUnavailableError || err instanceof DirectoryRefusedError)) throw err;
    deps.metrics.signIn(
      err instanceof AccountDisabledError ? 'disabled'
        : err instanceof DirectoryUnavailableError ? 'directory_unavailable'
          : err instanceof DirectoryRefusedError ? 'directory_refused'
            : err.status === 429 ? 'rate_limited' : 'busy',
    );
    if (err instanceof RetryLaterError || err instanceof DirectoryUnavailableError) ctx.set('Retry-After', String(err.retryAfterS));
    render(ctx, 'login', { ...page, errors: { login: err.message } }, err.status);
  }
  return undefined;
}
