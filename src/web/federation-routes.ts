import { callbackUrl } from '../services/federation/manage.js';
import Router from '@koa/router';
import type { Context, Next } from 'koa';
import type { LoginRow } from '../db/users.js';
import { AppError, RetryLaterError } from '../errors.js';
import {
  beginRoundTrip,
  configurationOf,
  createAccountFromUpstream,
  decide,
  failureOf,
  finishRoundTrip,
  identityUsed,
  linkIdentity,
  providerById,
  ROUND_TRIP_MS,
  suggestedUsername,
  trustedSecondFactor,
  upstreamAmr,
  UpstreamFailure,
  usableProvider,
  checkDomain,
  signInChoices,
  type Place,
  type RoundTrip,
} from '../services/federation/flow.js';
import { redirectKindOf } from '../services/federation/kinds.js';
import type { UpstreamProfile, UpstreamProvider } from '../services/federation/upstream.js';
import { hasPassword } from '../services/passwords.js';
import { sendSecurityNotice } from '../services/security-notices.js';
import { hasTwoFactor, verifySecondFactor } from '../services/two-factor.js';
import { AccountDisabledError, signIn, signedInUserById } from '../services/users.js';
import { pageT, translator } from '../i18n.js';
import { formFields, safeReturnTo, seenFrom, type WebDeps } from './context.js';
import { formErrorsOrRetry, formStatus } from './form-errors.js';
import { render } from './render.js';
import { amrOf, SecondFactorStep } from './second-factor.js';

/**
 * Sign-in through upstream providers, in the browser: "Continue with <name>" posts to
 * /login/upstream/<slug>, which sends the browser upstream; the upstream sends it back to
 * /login/callback/<slug>. What the browser must keep in between lives in signed, HttpOnly,
 * SameSite=Lax cookies, each scoped to the one path that reads it and cleared once read, so a
 * callback opened again (Back, reload, a replay) finds nothing and says so:
 * - the round trip (PKCE verifier, state, nonce, where the sign-in goes on), ten minutes, at /login/callback;
 * - the person the upstream vouched for, while they link an existing account or make a new one, at /login/continue;
 * - in an authorization flow, the sign-in handed to the flow's own page, which finishes the flow's
 *   sign-in step as a password does (interactions/routes.ts), at /interaction.
 */

/** Where Account settings lists the sign-in methods; a link ends there. */
export const SIGN_IN_METHODS_PAGE = '/account/settings/sign-in-methods';

const HANDOFF_MS = 2 * 60 * 1000;

/** A cookie holding one JSON value, signed with the cookie keys and carrying its own expiry. */
class JsonCookie<T> {
  constructor(
    private readonly name: string,
    private readonly path: string,
    private readonly lifetimeMs: number,
    private readonly secure: boolean,
  ) {}

  private get options() {
    return { httpOnly: true, sameSite: 'lax' as const, secure: this.secure, signed: true, overwrite: true, path: this.path };
  }

  set(ctx: Context, value: T): void {
    const until = Date.now() + this.lifetimeMs;
    ctx.cookies.set(this.name, Buffer.from(JSON.stringify({ until, value })).toString('base64url'), { ...this.options, maxAge: this.lifetimeMs });
  }

  /** The value, when the cookie is there, genuine and not expired; the cookie is cleared either way (single use). */
  take(ctx: Context): T | undefined {
    const raw = ctx.cookies.get(this.name, { signed: true });
    if (ctx.cookies.get(this.name)) this.clear(ctx);
    return raw ? this.parse(raw) : undefined;
  }

  /** The value without using it up (a page shown again after a wrong password). */
  peek(ctx: Context): T | undefined {
    const raw = ctx.cookies.get(this.name, { signed: true });
    return raw ? this.parse(raw) : undefined;
  }

  private parse(raw: string): T | undefined {
    try {
      const { until, value } = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as { until: number; value: T };
      return typeof until === 'number' && until > Date.now() ? value : undefined;
    } catch {
      return undefined;
    }
  }

  clear(ctx: Context): void {
    ctx.cookies.set(this.name, null, this.options);
  }
}

/** The person an upstream vouched for, waiting on the link or sign-up page. */
interface Pending {
  step: 'link' | 'sign-up';
  provider: number;
  profile: UpstreamProfile;
  place: Place;
  /** With step `link`: the account whose verified address matched. */
  userId?: number;
}

/** A flow's sign-in, handed from the callback (or the link and sign-up pages) to the flow's page. */
interface Handoff {
  flow: string;
  userId: number;
  amr: string[];
}

interface Cookies {
  trip: JsonCookie<RoundTrip>;
  pending: JsonCookie<Pending>;
  handoff: JsonCookie<Handoff>;
}

const cookiesByDeps = new WeakMap<WebDeps, Cookies>();

function cookiesOf(deps: WebDeps): Cookies {
  let found = cookiesByDeps.get(deps);
  if (!found) {
    const secure = deps.config.issuer.startsWith('https://');
    // Scoped to a path (not /), these cannot be __Host- cookies; __Secure- still keeps them to https.
    const prefix = secure ? '__Secure-' : '';
    found = {
      trip: new JsonCookie(`${prefix}idp_upstream`, '/login/callback', ROUND_TRIP_MS, secure),
      pending: new JsonCookie(`${prefix}idp_upstream_pending`, '/login/continue', ROUND_TRIP_MS, secure),
      handoff: new JsonCookie(`${prefix}idp_upstream_done`, '/interaction', HANDOFF_MS, secure),
    };
    cookiesByDeps.set(deps, found);
  }
  return found;
}

const FLOW_UID = /^[A-Za-z0-9_-]{1,64}$/;

function placeOf(form: Record<string, string>): Place {
  if (form.uid && FLOW_UID.test(form.uid)) return { flow: form.uid };
  return { site: safeReturnTo(form.return_to) };
}

/** The sign-in page the person came from, to use another way. */
function signInPageOf(place: Place): string {
  if ('flow' in place) return `/interaction/${place.flow}`;
  if (place.site === SIGN_IN_METHODS_PAGE) return SIGN_IN_METHODS_PAGE;
  return place.site && place.site !== '/groups' ? `/login?return_to=${encodeURIComponent(place.site)}` : '/login';
}

/** The sign-in limits' account key of an upstream sign-in: per provider and network, so no one can lock a provider out for everyone. */
function limitKey(slug: string, ip: string): string {
  return `upstream:${slug}:${ip}`;
}

/** The failure page: what happened, Try again (when the provider can be used), and another way to sign in. */
function renderFailure(ctx: Context, deps: WebDeps, failure: UpstreamFailure, options: { slug?: string; providerName?: string; place?: Place }): void {
  const place = options.place ?? { site: '/groups' };
  deps.log.warn({ provider: options.slug, reason: failure.reason, detail: failure.detail }, 'upstream sign-in failed');
  if (options.slug) deps.metrics.upstreamSignIn(options.slug, failure.reason);
  const linking = 'site' in place && place.site === SIGN_IN_METHODS_PAGE;
  // Linking starts again from Sign-in methods, where it asks for a fresh password first.
  const retry = options.slug && !linking && failure.reason !== 'disabled' && failure.reason !== 'account_disabled' && failure.reason !== 'identity_taken'
    ? { action: `/login/upstream/${options.slug}`, uid: 'flow' in place ? place.flow : '', returnTo: 'site' in place ? place.site : '' }
    : null;
  render(ctx, 'upstream-error', {
    // In English: the page follows the reader's language when its message has a translation too (error-page.ts).
    title: options.providerName ? translator('en')('upstream:sentences.failedWith', { provider: options.providerName }) : translator('en')('upstream:sentences.failed'),
    message: failure.message,
    retry,
    otherWay: signInPageOf(place),
    linking,
  }, failure.status);
}

/** Counts a failed upstream sign-in against the sign-in limits of the address (per provider). */
async function countFailure(deps: WebDeps, ctx: Context, slug: string): Promise<void> {
  try {
    const attempt = await deps.limits.beforeSignIn(limitKey(slug, ctx.ip), ctx.ip);
    await deps.limits.signInFailed(attempt);
  } catch (err) {
    if (!(err instanceof RetryLaterError)) throw err;
  }
}

/**
 * Sends the browser to the provider to sign in (`intent: 'sign-in'`) or to link the identity to
 * the signed-in account `userId` (`intent: 'link'`), unless the sign-in limits hold this address
 * back (failures count, starting does not). `returnTo` is where a site sign-in goes on; `flow`, an authorization flow's interaction.
 * When it cannot start (the provider unusable or not answering, too many attempts), the failure
 * page is shown instead.
 */
export async function startUpstream(
  ctx: Context,
  deps: WebDeps,
  provider: UpstreamProvider,
  options: { intent: 'sign-in' | 'link'; userId?: number; returnTo?: string; flow?: string },
): Promise<void> {
  const place: Place = options.intent === 'link' ? { site: SIGN_IN_METHODS_PAGE } : options.flow ? { flow: options.flow } : { site: safeReturnTo(options.returnTo) };
  const kind = redirectKindOf(provider.kind);
  try {
    if (!kind || provider.disabled) throw new UpstreamFailure('disabled', 403, `Signing in with ${provider.name} is turned off on this server.`);
    // An address blocked by the sign-in limits may not start; starting takes no point (only failures do).
    const attempt = await deps.limits.beforeSignIn(limitKey(provider.slug, ctx.ip), ctx.ip).catch((err: unknown) => {
      if (err instanceof RetryLaterError) {
        ctx.set('Retry-After', String(err.retryAfterS));
        throw new UpstreamFailure('rate_limited', 429, err.message);
      }
      throw err;
    });
    await deps.limits.signInNotChecked(attempt);
    let config;
    try {
      config = await configurationOf(provider, kind, { allowHttp: deps.config.env !== 'production' });
    } catch (err) {
      throw failureOf(err, provider.name);
    }
    const { url, trip } = await beginRoundTrip(config, provider, kind, { issuer: deps.config.issuer, intent: options.intent, userId: options.userId, place });
    cookiesOf(deps).trip.set(ctx, trip);
    // A page that moves on by itself, not a redirect: the sign-in page's Content-Security-Policy
    // (form-action 'self') also governs the redirects that follow a form, and the provider's
    // address is not 'self'. Its link is there for a browser that does not follow the refresh.
    render(ctx, 'upstream-redirect', { title: pageT(ctx)('signin:upstream.redirectTitle', { provider: provider.name }), providerName: provider.name, refreshTo: url.href });
  } catch (err) {
    if (!(err instanceof UpstreamFailure)) throw err;
    renderFailure(ctx, deps, err, { slug: provider.slug, providerName: provider.name, place });
  }
}

/** The flow's sign-in handed over by the callback, the link or the sign-up page, for this flow only; used once. */
export function takeUpstreamSignIn(ctx: Context, deps: WebDeps, uid: string): { userId: number; amr: string[] } | undefined {
  const handoff = cookiesOf(deps).handoff.take(ctx);
  return handoff && handoff.flow === uid ? { userId: handoff.userId, amr: handoff.amr } : undefined;
}

const SIGN_IN_PAGE_OF_FLOW = /^\/interaction\/[^/]+(?:\/login)?$/;

/** Loads the enabled providers for the sign-in pages' "Continue with" buttons (the site's and the flow's). */
export function upstreamButtons(deps: WebDeps) {
  return async function signInProviders(ctx: Context, next: Next): Promise<void> {
    ctx.state.passwordSignIn = deps.config.passwordSignIn;
    // Read only where a sign-in page may be shown: the site's, and a flow's (its page, or its password form answered with an error).
    if (ctx.path === '/login' || SIGN_IN_PAGE_OF_FLOW.test(ctx.path)) {
      const { buttons, directories } = await signInChoices(deps.db);
      ctx.state.upstreams = buttons;
      ctx.state.directories = directories;
    }
    await next();
  };
}

export function federationRoutes(deps: WebDeps): Router {
  const router = new Router();
  const secondFactor = new SecondFactorStep(deps);
  const cookies = cookiesOf(deps);

  /** Signs in (the site's session, or the flow's step), or asks for this account's second factor first. */
  async function signInAs(ctx: Context, user: LoginRow, amr: string[], place: Place, options: { askSecondFactor: boolean }): Promise<void> {
    if (options.askSecondFactor && user.two_factor) {
      await secondFactor.needed(ctx, user, 'flow' in place ? { flow: place.flow } : 'site', 'fed');
      if ('flow' in place) return ctx.redirect(`/interaction/${place.flow}/two-factor`);
      return ctx.redirect(`/login/two-factor?return_to=${encodeURIComponent(place.site)}`);
    }
    deps.metrics.signIn('success');
    if ('flow' in place) {
      cookies.handoff.set(ctx, { flow: place.flow, userId: user.id, amr });
      return ctx.redirect(`/interaction/${place.flow}/upstream`);
    }
    await deps.sessions.signIn(ctx, user.id, amr);
    ctx.redirect(place.site);
  }

  router.post('/login/upstream/:slug', async (ctx) => {
    const form = formFields(ctx);
    const place = placeOf(form);
    let provider;
    try {
      ({ provider } = await usableProvider(deps.db, deps.cipher, ctx.params.slug ?? ''));
    } catch (err) {
      if (!(err instanceof UpstreamFailure)) throw err;
      return renderFailure(ctx, deps, err, { place });
    }
    await startUpstream(ctx, deps, provider, { intent: 'sign-in', ...('flow' in place ? { flow: place.flow } : { returnTo: place.site }) });
  });

  // Opened by itself (a bookmark, a link): there is nothing to start without the sign-in page's form.
  router.get('/login/upstream/:slug', (ctx) => ctx.redirect('/login'));

  router.get('/login/callback/:slug', async (ctx) => {
    const slug = ctx.params.slug ?? '';
    const trip = cookies.trip.take(ctx);
    let place: Place = trip?.place ?? { site: '/groups' };
    let providerName: string | undefined;
    try {
      const { provider, kind } = await usableProvider(deps.db, deps.cipher, slug);
      providerName = provider.name;
      if (!trip) {
        throw new UpstreamFailure('expired', 400, `This sign-in with ${provider.name} was already finished, or took longer than ten minutes. Start again from the sign-in page.`);
      }
      if (trip.provider !== provider.id) throw new UpstreamFailure('bad_state', 400, 'This answer does not belong to the sign-in started in this browser. Start again from the sign-in page.');
      const state = typeof ctx.query.state === 'string' ? ctx.query.state : '';
      if (state !== trip.state) throw new UpstreamFailure('bad_state', 400, 'This answer does not belong to the sign-in started in this browser. Start again from the sign-in page.');
      const config = await configurationOf(provider, kind, { allowHttp: deps.config.env !== 'production' }).catch((err: unknown) => Promise.reject(failureOf(err, provider.name)));
      const current = new URL(`${callbackUrl(deps.config.issuer, slug)}${ctx.querystring ? `?${ctx.querystring}` : ''}`);
      const profile = await finishRoundTrip(config, kind, trip, current, provider.name);
      place = trip.place;
      if (trip.intent === 'link') return await finishLink(ctx, provider, profile, trip.userId);
      const decision = await decide(deps.db, provider, profile);
      if (decision.step === 'sign-in') {
        await identityUsed(deps.db, decision.identityId, profile);
        deps.metrics.upstreamSignIn(slug, 'success');
        return await signInAs(ctx, decision.user, upstreamAmr(provider, profile), place, { askSecondFactor: !trustedSecondFactor(provider, profile) });
      }
      deps.metrics.upstreamSignIn(slug, decision.step === 'link' ? 'link' : 'sign_up');
      cookies.pending.set(ctx, { step: decision.step, provider: provider.id, profile, place, userId: decision.step === 'link' ? decision.user.id : undefined });
      ctx.redirect(decision.step === 'link' ? '/login/continue/link' : '/login/continue/sign-up');
    } catch (err) {
      if (!(err instanceof UpstreamFailure)) throw err;
      if (err.reason !== 'disabled') await countFailure(deps, ctx, slug);
      renderFailure(ctx, deps, err, { slug, providerName, place });
    }
  });

  /** A link from Account settings: to the account that started it, still signed in here. */
  async function finishLink(ctx: Context, provider: UpstreamProvider, profile: UpstreamProfile, userId: number | undefined): Promise<void> {
    const user = ctx.state.user as { id: number; username: string; email: string } | undefined;
    if (!user || user.id !== userId) {
      throw new UpstreamFailure('bad_state', 400, `You are no longer signed in as the account that started linking ${provider.name}. Sign in and start again from Account settings → Sign-in methods.`);
    }
    checkDomain(provider, profile);
    await linkIdentity(deps.db, provider, profile, user, ctx.ip ?? null);
    sendSecurityNotice(deps, user, 'sign-in-method-linked', seenFrom(ctx), { detail: provider.name });
    deps.metrics.upstreamSignIn(provider.slug, 'linked');
    ctx.redirect(`${SIGN_IN_METHODS_PAGE}?notice=linked`);
  }

  /** The person waiting on the link or sign-up page, and their provider; the failure page when it is gone. */
  async function pendingOf(ctx: Context, step: Pending['step']): Promise<{ pending: Pending; provider: UpstreamProvider } | undefined> {
    const pending = cookies.pending.peek(ctx);
    if (!pending || pending.step !== step) {
      renderFailure(ctx, deps, new UpstreamFailure('expired', 400, 'This step of signing in has expired or was already finished. Start again from the sign-in page.'), {});
      return undefined;
    }
    try {
      return { pending, provider: (await providerById(deps.db, deps.cipher, pending.provider)).provider };
    } catch (err) {
      if (!(err instanceof UpstreamFailure)) throw err;
      cookies.pending.clear(ctx);
      renderFailure(ctx, deps, err, { place: pending.place });
      return undefined;
    }
  }

  async function renderLink(ctx: Context, pending: Pending, provider: UpstreamProvider, errors: Record<string, string> = {}, status = 200): Promise<void> {
    const user = pending.userId ? await signedInUserById(deps.db, pending.userId) : undefined;
    const withTwoFactor = user ? await hasTwoFactor(deps.db, user.id) : false;
    render(ctx, 'upstream-link', {
      title: pageT(ctx)('signin:upstream.linkTitle'),
      providerName: provider.name,
      email: pending.profile.email,
      hasPassword: user ? hasPassword(user.password_hash) : false,
      withTwoFactor,
      otherWay: signInPageOf(pending.place),
      errors,
    }, status);
  }

  router.get('/login/continue/link', async (ctx) => {
    const found = await pendingOf(ctx, 'link');
    if (found) await renderLink(ctx, found.pending, found.provider);
  });

  // Signing in to the account whose address matched (its password, and its second factor when it has one) links the identity to it.
  router.post('/login/continue/link', async (ctx) => {
    const found = await pendingOf(ctx, 'link');
    if (!found) return;
    const { pending, provider } = found;
    const form = formFields(ctx);
    const account = pending.userId ? await signedInUserById(deps.db, pending.userId) : undefined;
    if (!account) {
      cookies.pending.clear(ctx);
      return renderFailure(ctx, deps, new UpstreamFailure('account_disabled', 403, 'The account with this address is disabled or was removed.'), { slug: provider.slug, providerName: provider.name, place: pending.place });
    }
    let user: LoginRow | undefined;
    try {
      user = await signIn(deps, { login: account.username, password: form.password ?? '', ip: ctx.ip });
    } catch (err) {
      if (!(err instanceof RetryLaterError || err instanceof AccountDisabledError)) throw err;
      if (err instanceof RetryLaterError) ctx.set('Retry-After', String(err.retryAfterS));
      return renderLink(ctx, pending, provider, { password: err.message }, err.status);
    }
    if (!user) {
      deps.metrics.signIn('wrong_password');
      return renderLink(ctx, pending, provider, { password: 'Incorrect password.' }, 401);
    }
    let amr = ['fed', ...amrOf()];
    if (user.two_factor) {
      try {
        amr = ['fed', ...amrOf(await verifySecondFactor(deps, user, form.code ?? '', ctx.ip))];
      } catch (err) {
        if (!(err instanceof AppError && (err.field === 'code' || err instanceof RetryLaterError))) throw err;
        deps.metrics.signIn('second_factor_failed');
        return renderLink(ctx, pending, provider, { code: err.message }, err.status);
      }
    }
    cookies.pending.clear(ctx);
    try {
      await linkIdentity(deps.db, provider, pending.profile, user, ctx.ip ?? null);
    } catch (err) {
      if (!(err instanceof UpstreamFailure)) throw err;
      return renderFailure(ctx, deps, err, { slug: provider.slug, providerName: provider.name, place: pending.place });
    }
    sendSecurityNotice(deps, user, 'sign-in-method-linked', seenFrom(ctx), { detail: provider.name });
    deps.metrics.upstreamSignIn(provider.slug, 'linked');
    await signInAs(ctx, user, amr, pending.place, { askSecondFactor: false });
  });

  function renderSignUp(ctx: Context, pending: Pending, provider: UpstreamProvider, values: { username: string; name: string }, errors: Record<string, string> = {}, status = 200): void {
    render(ctx, 'upstream-sign-up', {
      title: pageT(ctx)('signup:upstreamSignUp.title'),
      providerName: provider.name,
      email: pending.profile.email,
      emailVerified: pending.profile.emailVerified,
      values,
      errors,
      otherWay: signInPageOf(pending.place),
    }, status);
  }

  router.get('/login/continue/sign-up', async (ctx) => {
    const found = await pendingOf(ctx, 'sign-up');
    if (!found) return;
    const { profile } = found.pending;
    renderSignUp(ctx, found.pending, found.provider, { username: suggestedUsername(profile), name: profile.name.slice(0, 100) });
  });

  router.post('/login/continue/sign-up', async (ctx) => {
    const found = await pendingOf(ctx, 'sign-up');
    if (!found) return;
    const { pending, provider } = found;
    const form = formFields(ctx);
    const values = { username: form.username ?? '', name: form.name ?? '' };
    let user: LoginRow;
    try {
      if (!provider.allowSignUp) throw new UpstreamFailure('sign_up_closed', 403, `New accounts can no longer be made with ${provider.name}.`);
      await deps.limits.takeSignUp(ctx.ip);
      try {
        user = await createAccountFromUpstream(deps.db, provider, pending.profile, values);
      } catch (err) {
        await deps.limits.signUpNotMade(ctx.ip);
        throw err;
      }
    } catch (err) {
      if (err instanceof UpstreamFailure) {
        cookies.pending.clear(ctx);
        return renderFailure(ctx, deps, err, { slug: provider.slug, providerName: provider.name, place: pending.place });
      }
      const errors = formErrorsOrRetry(ctx, err, 'username', { username: 'Username', name: 'Name' });
      if (!errors) throw err;
      return renderSignUp(ctx, pending, provider, values, errors, formStatus(err));
    }
    cookies.pending.clear(ctx);
    deps.metrics.upstreamSignIn(provider.slug, 'success');
    await signInAs(ctx, user, upstreamAmr(provider, pending.profile), pending.place, { askSecondFactor: false });
  });

  return router;
}
