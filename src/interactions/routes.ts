import Router from '@koa/router';
import type { Context, Next } from 'koa';
import type Provider from 'oidc-provider';
import type { InteractionResults } from 'oidc-provider';
import { errors as oidcErrors } from 'oidc-provider';
import { AppError, NotFoundError } from '../errors.js';
import { acrOf, describeScopes, splitScopes } from '../vocabulary.js';
import { IGNORED_SCOPE_PARAM } from '../provider/compat.js';
import { ROUTES } from '../provider/configuration.js';
import { consentSubject } from '../services/apps.js';
import { consentToGrant } from '../services/grants.js';
import { resourcesAskedFor } from '../services/resources/lookup.js';
import { userById } from '../services/users.js';
import { signInOrExplain } from '../web/account-routes.js';
import { formFields, type WebDeps } from '../web/context.js';
import { pageT } from '../i18n.js';
import { takeUpstreamSignIn } from '../web/federation-routes.js';
import { render } from '../web/render.js';
import { PasskeyChallenges } from '../web/passkey-routes.js';
import { amrOf, SecondFactorStep, SPENT_MESSAGE } from '../web/second-factor.js';
import { allowFormActionTo } from '../edge/security-headers.js';
import { restartLink } from './restart.js';

/** The flow's sign-in result: who, how (`amr`), and the class that makes (`acr`, given when asked). */
function signedIn(userId: number, amr: string[]) {
  return { login: { accountId: String(userId), amr, acr: acrOf(amr) } };
}

/** The flow's second-step page: the code and a passkey's answer post within the flow. */
function flowPage(uid: string) {
  return { action: `/interaction/${uid}/two-factor`, passkey: { action: `/interaction/${uid}/passkey`, uid } };
}

/**
 * The sign-in and consent steps of the authorization flow, wired as oidc-provider's example
 * does: interactionDetails → prompt.name → the result (finish). Pages are never cached.
 */
export function interactionRoutes(deps: WebDeps & { provider: Provider; cookieKeys: readonly string[] }): Router {
  const { provider, db } = deps;
  const flowStart = (interaction: Interaction) => flowStartOf(interaction, deps.cookieKeys);
  const router = new Router({ prefix: '/interaction/:uid' });
  const secondFactor = new SecondFactorStep(deps);
  const passkeys = new PasskeyChallenges(deps);

  router.use(async function expiredInteraction(ctx: Context, next: Next) {
    try {
      await next();
    } catch (err) {
      if (err instanceof oidcErrors.SessionNotFound) {
        throw new AppError(400, 'interaction_expired', 'This sign-in request has expired or was already completed. Go back to the application and start again.');
      }
      throw err;
    }
  });

  async function details(ctx: Context) {
    const found = await provider.interactionDetails(ctx.req, ctx.res);
    if (found.uid !== ctx.params.uid) throw new NotFoundError('no such sign-in request');
    // Signing in or consenting ends in a redirect to the application's callback.
    allowFormActionTo(ctx, found.params.redirect_uri);
    return found;
  }

  async function consentPage(ctx: Context, interaction: Interaction) {
    const { app, groupName } = await consentSubject(db, String(interaction.params.client_id));
    const ignored = splitScopes(String(interaction.params[IGNORED_SCOPE_PARAM] ?? ''));
    render(ctx, 'consent', {
      title: pageT(ctx)('consent:title', { app: app.name }),
      uid: interaction.uid,
      app: { name: app.name, homepageURL: app.homepage_url, description: app.description, groupName },
      // A client that registered itself (a metadata document, or dynamic registration): said to be unreviewed, with where it came from.
      registered: app.registered_by ? { by: app.registered_by, from: app.registered_from ?? '' } : null,
      scopes: describeScopes(String(interaction.params.scope ?? '')),
      // The resources (RFC 8707) the application asks for, each with its group and the scopes it asks of it.
      resources: await resourcesAskedFor(db, interaction.params.resource, String(interaction.params.scope ?? '')),
      // Authorize drops scopes it does not know (and asks for the default when none is left): say which.
      ignoredScopes: ignored,
      // A device flow has no redirect: the device that showed the code gets the tokens.
      sentTo: interaction.deviceCode ? null : originOf(String(interaction.params.redirect_uri ?? '')),
    });
  }

  /** The flow's sign-in page, naming the application and its group; sign-up and reset lead back to the flow. */
  async function loginPage(ctx: Context, interaction: Interaction) {
    const { app, groupName } = await consentSubject(db, String(interaction.params.client_id));
    return {
      title: pageT(ctx)('signin:titleInFlow', { app: app.name }),
      action: `/interaction/${interaction.uid}/login`,
      returnTo: '',
      // The "Continue with" buttons carry the flow's uid through the upstream round trip.
      uid: interaction.uid,
      passkey: { action: `/interaction/${interaction.uid}/passkey`, uid: interaction.uid },
      flow: { appName: app.name, groupName, start: flowStart(interaction) },
    };
  }

  /** With REQUIRE_VERIFIED_EMAIL, the signed-in account of the flow while its address is not verified. */
  async function unverifiedAccount(interaction: Interaction) {
    if (!deps.config.requireVerifiedEmail) return undefined;
    const user = await userById(db, Number(interaction.session!.accountId));
    return user && !user.email_verified_at ? user : undefined;
  }

  router.get('/', async (ctx) => {
    const interaction = await details(ctx);
    if (interaction.prompt.name === 'login') {
      render(ctx, 'login', await loginPage(ctx, interaction));
      return;
    }
    const unverified = await unverifiedAccount(interaction);
    if (unverified) {
      // The link mailed from here returns to the flow's start: this interaction may expire before it is followed.
      render(ctx, 'verify-required', { title: pageT(ctx)('signin:verifyRequired.title'), email: unverified.email, uid: interaction.uid, returnTo: flowStart(interaction), hideVerifyBanner: true }, 403);
      return;
    }
    await consentPage(ctx, interaction);
  });

  router.post('/login', async (ctx) => {
    const interaction = await details(ctx);
    if (interaction.prompt.name !== 'login') throw new AppError(400, 'invalid_request', 'this sign-in request does not need a password');
    const form = formFields(ctx);
    const page = { ...(await loginPage(ctx, interaction)), values: { login: form.login ?? '' } };
    const user = await signInOrExplain(ctx, deps, form, page);
    if (!user) return;
    if (await secondFactor.needed(ctx, user, { flow: interaction.uid })) return ctx.redirect(`/interaction/${interaction.uid}/two-factor`);
    await finish(ctx, interaction, signedIn(user.id, amrOf()));
  });

  router.get('/two-factor', async (ctx) => {
    const interaction = await details(ctx);
    const place = { flow: interaction.uid };
    if (interaction.prompt.name !== 'login' || !(await secondFactor.waiting(ctx, place))) return ctx.redirect(`/interaction/${interaction.uid}`);
    await secondFactor.renderChallenge(ctx, flowPage(interaction.uid));
  });

  router.post('/two-factor', async (ctx) => {
    const interaction = await details(ctx);
    if (interaction.prompt.name !== 'login') throw new AppError(400, 'invalid_request', 'this sign-in request does not need a code');
    const passed = await secondFactor.verify(ctx, { flow: interaction.uid }, formFields(ctx).code ?? '', flowPage(interaction.uid));
    if (passed === 'failed') return;
    if (passed === 'spent') return render(ctx, 'login', { ...(await loginPage(ctx, interaction)), errors: { login: SPENT_MESSAGE } }, 401);
    if (!passed) return ctx.redirect(`/interaction/${interaction.uid}`);
    await finish(ctx, interaction, signedIn(passed.user.id, passed.amr));
  });

  router.post('/confirm', async (ctx) => {
    const interaction = await details(ctx);
    if (interaction.prompt.name !== 'consent') throw new AppError(400, 'invalid_request', 'this sign-in request is not waiting for consent');
    if (await unverifiedAccount(interaction)) throw new AppError(403, 'email_not_verified', 'Verify your e-mail address before authorizing applications.');
    const missing = interaction.prompt.details as { missingOIDCScope?: string[]; missingOIDCClaims?: string[]; missingResourceScopes?: Record<string, string[]> };
    // One grant per user and application, listed in Account settings → Authorized applications,
    // so that a later flow in any session skips consent and Revoke reaches every token.
    const grantId = await consentToGrant(db, provider, {
      accountId: interaction.session!.accountId,
      clientId: String(interaction.params.client_id),
      flowGrantId: interaction.grantId,
      scopes: missing.missingOIDCScope,
      claims: missing.missingOIDCClaims,
      resourceScopes: missing.missingResourceScopes,
    });
    await finish(ctx, interaction, { ...interaction.lastSubmission, consent: { grantId } });
  });

  // Back from an upstream provider (web/federation-routes.ts): the sign-in it handed over finishes this step.
  router.get('/upstream', async (ctx) => {
    const interaction = await details(ctx);
    const handed = takeUpstreamSignIn(ctx, deps, interaction.uid);
    if (interaction.prompt.name !== 'login' || !handed) return ctx.redirect(`/interaction/${interaction.uid}`);
    await finish(ctx, interaction, signedIn(handed.userId, handed.amr));
  });

  // The address a passkey's answer posts to, opened on its own: the flow's current step.
  router.get('/passkey', async (ctx) => {
    const interaction = await details(ctx);
    ctx.redirect(`/interaction/${interaction.uid}`);
  });

  // A passkey's answer: the sign-in alone, or the second factor after the password.
  router.post('/passkey', async (ctx) => {
    const interaction = await details(ctx);
    if (interaction.prompt.name !== 'login') throw new AppError(400, 'invalid_request', 'this sign-in request does not need a passkey');
    const place = { flow: interaction.uid };
    const waiting = await passkeys.secondFactor.waiting(ctx, place);
    const answered = await passkeys.answer(ctx, place, formFields(ctx).response ?? '', (message, status, startOver) =>
      waiting && !startOver
        ? passkeys.secondFactor.renderChallenge(ctx, flowPage(interaction.uid), message, status)
        : loginPage(ctx, interaction).then((page) => render(ctx, 'login', { ...page, errors: { login: message } }, status)),
    );
    if (!answered) return;
    await finish(ctx, interaction, signedIn(answered.user.id, answered.amr));
  });

  // "Not you?": signs this browser out and asks the same authorization request again, so the
  // person signs in with another account and the application still gets its answer.
  router.post('/switch-account', async (ctx) => {
    const interaction = await details(ctx);
    if (interaction.deviceCode && interaction.session) {
      // A device flow resumes this interaction (flowStart). The library binds it to the session it
      // began in, and resuming it in the session that follows the sign-out would fail ("interaction
      // session and authentication session mismatch") and end the device's request with that
      // error. It is unbound first, as the library does itself when a flow signs in another account.
      delete interaction.session;
      await interaction.save(Math.max(1, interaction.exp - Math.floor(Date.now() / 1000)));
    }
    await deps.sessions.signOut(ctx);
    ctx.redirect(flowStart(interaction));
  });

  router.post('/abort', async (ctx) => {
    const interaction = await details(ctx);
    await finish(ctx, interaction, { error: 'access_denied', error_description: 'the user declined to authorize the application' });
  });

  return router;
}

type Interaction = Awaited<ReturnType<Provider['interactionDetails']>>;

/**
 * What the library's interactionFinished does (the result saved on the interaction for the rest
 * of its lifetime, then a 303 to the authorization request's resume address), on the interaction
 * this request loaded already through interactionDetails, which checked it against its session.
 * interactionFinished would find the interaction and its session again: two more reads of the
 * store on every sign-in and consent. Resuming checks both once more.
 */
async function finish(ctx: Context, interaction: Interaction, result: InteractionResults): Promise<void> {
  interaction.result = result;
  await interaction.persist();
  ctx.respond = false;
  ctx.res.statusCode = 303;
  ctx.res.setHeader('Location', interaction.returnTo);
  ctx.res.setHeader('Content-Length', '0');
  ctx.res.end();
}

/**
 * The authorization request that started the flow, as a same-site path: signing up, a mailed
 * link, or "Not you?" start the flow again from it. A new interaction is made then, which finds
 * the session as it now is (signed in, or signed out) and so the right next step, even once
 * this interaction has expired. A device flow has no authorization request to repeat (its code
 * was entered once): it resumes at the verification page's own address for it, which asks the
 * session again while the device code lasts. A pushed request (RFC 9126) is pushed again when
 * its link is followed (restart.ts): an application may accept no other.
 */
export function flowStartOf(interaction: Pick<Interaction, 'params' | 'deviceCode' | 'returnTo'> & { parJti?: string }, cookieKeys: readonly string[]): string {
  if (interaction.deviceCode) return new URL(interaction.returnTo).pathname;
  if (interaction.parJti) {
    const pushed = Object.entries(interaction.params).filter((entry): entry is [string, string] => typeof entry[1] === 'string');
    return restartLink(cookieKeys, Object.fromEntries(pushed));
  }
  const { [IGNORED_SCOPE_PARAM]: ignored, ...params } = interaction.params;
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (typeof value === 'string') query.set(name, value);
  }
  // The scopes the client asked for, the unknown ones included, as it sent them.
  if (typeof ignored === 'string' && ignored) query.set('scope', [query.get('scope'), ignored].filter(Boolean).join(' '));
  return `${ROUTES.authorization}?${query}`;
}

/** Where the person is sent after consent, as they can judge it: the redirect_uri's origin (scheme and host). */
function originOf(redirectUri: string): string {
  try {
    const url = new URL(redirectUri);
    // A native application's own scheme (com.example.app:/callback) has no web origin.
    return url.origin !== 'null' ? url.origin : `${url.protocol}${url.host ? `//${url.host}` : ''}`;
  } catch {
    return redirectUri;
  }
}
