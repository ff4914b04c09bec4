import Router from '@koa/router';
import type { Context } from 'koa';
import type { LoginRow } from '../db/users.js';
import { AppError, RetryLaterError } from '../errors.js';
import { AccountDisabledError, signIn, signUp } from '../services/users.js';
import { sendVerificationInBackground } from '../services/verification.js';
import { formFields, safeReturnTo, type WebDeps } from './context.js';
import { formErrors, LABELS } from './form-errors.js';
import { render } from './render.js';
import { amrOf, SecondFactorStep, SPENT_MESSAGE } from './second-factor.js';

/** The site's second-step page: the code posts to /login/two-factor, a passkey to /login/passkey. */
function sitePage(returnTo: string) {
  return { action: '/login/two-factor', returnTo, passkey: { action: '/login/passkey', uid: '' } };
}

/** The site's sign-in page, with `errors` beside its fields. */
export function renderSignIn(ctx: Context, returnTo: string, errors: Record<string, string> = {}, status = 200): void {
  render(ctx, 'login', { title: 'Sign in', action: '/login', returnTo, errors, passkey: { action: '/login/passkey', uid: '' } }, status);
}

/** Sign up, sign in, sign out. */
export function accountRoutes(deps: WebDeps): Router {
  const router = new Router();
  const secondFactor = new SecondFactorStep(deps);

  router.get('/', (ctx) => {
    if (ctx.state.user) return ctx.redirect('/groups');
    return ctx.redirect(deps.config.signup === 'open' ? '/signup' : '/login');
  });

  router.get('/login', (ctx) => {
    if (ctx.state.user) return ctx.redirect(safeReturnTo(ctx.query.return_to));
    renderSignIn(ctx, safeReturnTo(ctx.query.return_to));
  });

  router.post('/login', async (ctx) => {
    const form = formFields(ctx);
    const page = { title: 'Sign in', action: '/login', returnTo: safeReturnTo(form.return_to), values: { login: form.login ?? '' }, passkey: { action: '/login/passkey', uid: '' } };
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
  // account continues, signed in, to the consent page; the verification mail leads there too.
  router.get('/signup', (ctx) => {
    if (deps.config.signup !== 'open') throw new AppError(404, 'not_found', 'Sign-up is closed on this server. Ask an administrator for an account.');
    if (ctx.state.user) return ctx.redirect(safeReturnTo(ctx.query.return_to));
    render(ctx, 'signup', { title: 'Sign up', returnTo: safeReturnTo(ctx.query.return_to, ''), labels: LABELS.signup });
  });

  router.post('/signup', async (ctx) => {
    if (deps.config.signup !== 'open') throw new AppError(404, 'not_found', 'Sign-up is closed on this server. Ask an administrator for an account.');
    const form = formFields(ctx);
    const values = { username: form.username ?? '', email: form.email ?? '', name: form.name ?? '' };
    const returnTo = safeReturnTo(form.return_to, '');
    try {
      const user = await signUp(deps, { ...values, password: form.password ?? '' }, ctx.ip);
      sendVerificationInBackground(deps, user, returnTo || undefined);
      await deps.sessions.signIn(ctx, user.id);
      ctx.redirect(returnTo || '/groups');
    } catch (err) {
      if (err instanceof RetryLaterError) ctx.set('Retry-After', String(err.retryAfterS));
      const errors = err instanceof RetryLaterError ? { username: err.message } : formErrors(err, LABELS.signup);
      if (!errors) throw err;
      render(ctx, 'signup', { title: 'Sign up', returnTo, values, errors, labels: LABELS.signup }, (err as AppError).status);
    }
  });

  router.post('/logout', async (ctx) => {
    await deps.sessions.signOut(ctx);
    ctx.redirect('/login');
  });

  return router;
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
  try {
    const user = await signIn(deps, { login: form.login ?? '', password: form.password ?? '', ip: ctx.ip });
    // A right password is counted once the second step is known (SecondFactorStep.needed).
    if (user) return user;
    deps.metrics.signIn('wrong_password');
    render(ctx, 'login', { ...page, errors: { login: 'Incorrect username, email or password.' } }, 401);
  } catch (err) {
    if (!(err instanceof RetryLaterError || err instanceof AccountDisabledError)) throw err;
    deps.metrics.signIn(err instanceof AccountDisabledError ? 'disabled' : err.status === 429 ? 'rate_limited' : 'busy');
    if (err instanceof RetryLaterError) ctx.set('Retry-After', String(err.retryAfterS));
    render(ctx, 'login', { ...page, errors: { login: err.message } }, err.status);
  }
  return undefined;
}
