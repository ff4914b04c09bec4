import Router from '@koa/router';
import type { Context, Next } from 'koa';
import type Provider from 'oidc-provider';
import { errors as oidcErrors } from 'oidc-provider';
import { AppError, NotFoundError } from '../errors.js';
import { isScope, SCOPES } from '../vocabulary.js';
import { consentSubject } from '../services/apps.js';
import { consentToGrant } from '../services/grants.js';
import { userById } from '../services/users.js';
import { signInOrExplain } from '../web/account-routes.js';
import { formFields, type WebDeps } from '../web/context.js';
import { render } from '../web/render.js';
import { PasskeyChallenges } from '../web/passkey-routes.js';
import { amrOf, SecondFactorStep } from '../web/second-factor.js';
import { allowFormActionTo } from '../edge/security-headers.js';

/** The flow's second-step page: the code and a passkey's answer post within the flow. */
function flowPage(uid: string) {
  return { action: `/interaction/${uid}/two-factor`, passkey: { action: `/interaction/${uid}/passkey`, uid } };
}

/** The flow's sign-in page. */
function loginPage(uid: string) {
  return { title: 'Sign in', action: `/interaction/${uid}/login`, returnTo: '', passkey: { action: `/interaction/${uid}/passkey`, uid } };
}

/**
 * The sign-in and consent steps of the authorization flow, wired as oidc-provider's example
 * does: interactionDetails → prompt.name → interactionFinished. Pages are never cached.
 */
export function interactionRoutes(deps: WebDeps & { provider: Provider }): Router {
  const { provider, db } = deps;
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

  async function consentPage(ctx: Context, interaction: Awaited<ReturnType<typeof details>>) {
    const clientId = String(interaction.params.client_id);
    const { app, groupName } = await consentSubject(db, clientId);
    const requested = String(interaction.params.scope ?? '').split(' ').filter(isScope);
    render(ctx, 'consent', {
      title: `Authorize ${app.name}`,
      uid: interaction.uid,
      app: { name: app.name, homepageURL: app.homepage_url, description: app.description, groupName },
      scopes: requested.map((scope) => ({ scope, description: SCOPES[scope] })),
    });
  }

  /** With REQUIRE_VERIFIED_EMAIL, the signed-in account of the flow while its address is not verified. */
  async function unverifiedAccount(interaction: Awaited<ReturnType<typeof details>>) {
    if (!deps.config.requireVerifiedEmail) return undefined;
    const user = await userById(db, Number(interaction.session!.accountId));
    return user && !user.email_verified_at ? user : undefined;
  }

  router.get('/', async (ctx) => {
    const interaction = await details(ctx);
    if (interaction.prompt.name === 'login') {
      render(ctx, 'login', loginPage(interaction.uid));
      return;
    }
    const unverified = await unverifiedAccount(interaction);
    if (unverified) {
      render(ctx, 'verify-required', { title: 'Verify your e-mail address', email: unverified.email, uid: interaction.uid, hideVerifyBanner: true }, 403);
      return;
    }
    await consentPage(ctx, interaction);
  });

  router.post('/login', async (ctx) => {
    const interaction = await details(ctx);
    if (interaction.prompt.name !== 'login') throw new AppError(400, 'invalid_request', 'this sign-in request does not need a password');
    const form = formFields(ctx);
    const page = { ...loginPage(interaction.uid), values: { login: form.login ?? '' } };
    const user = await signInOrExplain(ctx, deps, form, page);
    if (!user) return;
    if (await secondFactor.needed(ctx, user, { flow: interaction.uid })) return ctx.redirect(`/interaction/${interaction.uid}/two-factor`);
    ctx.respond = false;
    await provider.interactionFinished(ctx.req, ctx.res, { login: { accountId: String(user.id), amr: amrOf() } }, { mergeWithLastSubmission: false });
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
    if (!passed) return ctx.redirect(`/interaction/${interaction.uid}`);
    ctx.respond = false;
    await provider.interactionFinished(ctx.req, ctx.res, { login: { accountId: String(passed.user.id), amr: passed.amr } }, { mergeWithLastSubmission: false });
  });

  router.post('/confirm', async (ctx) => {
    const interaction = await details(ctx);
    if (interaction.prompt.name !== 'consent') throw new AppError(400, 'invalid_request', 'this sign-in request is not waiting for consent');
    if (await unverifiedAccount(interaction)) throw new AppError(403, 'email_not_verified', 'Verify your e-mail address before authorizing applications.');
    const missing = interaction.prompt.details as { missingOIDCScope?: string[]; missingOIDCClaims?: string[] };
    // One grant per user and application, listed in Account settings → Authorized applications,
    // so that a later flow in any session skips consent and Revoke reaches every token.
    const grantId = await consentToGrant(db, provider, {
      accountId: interaction.session!.accountId,
      clientId: String(interaction.params.client_id),
      flowGrantId: interaction.grantId,
      scopes: missing.missingOIDCScope,
      claims: missing.missingOIDCClaims,
    });
    ctx.respond = false;
    await provider.interactionFinished(ctx.req, ctx.res, { consent: { grantId } }, { mergeWithLastSubmission: true });
  });

  // A passkey's answer: the sign-in alone, or the second factor after the password.
  router.post('/passkey', async (ctx) => {
    const interaction = await details(ctx);
    if (interaction.prompt.name !== 'login') throw new AppError(400, 'invalid_request', 'this sign-in request does not need a passkey');
    const place = { flow: interaction.uid };
    const waiting = await passkeys.secondFactor.waiting(ctx, place);
    const signedIn = await passkeys.answer(ctx, place, formFields(ctx).response ?? '', (message, status) =>
      waiting
        ? passkeys.secondFactor.renderChallenge(ctx, flowPage(interaction.uid), message, status)
        : render(ctx, 'login', { ...loginPage(interaction.uid), errors: { login: message } }, status),
    );
    if (!signedIn) return;
    ctx.respond = false;
    await provider.interactionFinished(ctx.req, ctx.res, { login: { accountId: String(signedIn.user.id), amr: signedIn.amr } }, { mergeWithLastSubmission: false });
  });

  router.post('/abort', async (ctx) => {
    await details(ctx);
    ctx.respond = false;
    await provider.interactionFinished(
      ctx.req,
      ctx.res,
      { error: 'access_denied', error_description: 'the user declined to authorize the application' },
      { mergeWithLastSubmission: false },
    );
  });

  return router;
}
