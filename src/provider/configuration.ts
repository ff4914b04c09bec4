import type { Knex } from 'knex';
import { errors, interactionPolicy, type Adapter, type Configuration, type ErrorOut, type Grant, type KoaContextWithOIDC } from 'oidc-provider';
import type { Config } from '../config.js';
import { cookieNames } from '../cookie-names.js';
import { findUserGrant } from '../db/grants.js';
import { ACR_VALUES, SCOPES, TTL } from '../vocabulary.js';
import { accountFinder, type IdpAccount } from './accounts.js';
import { outgoingFetch } from './backchannel-logout.js';
import { createClientAdapter } from './clients.js';
import { IGNORED_SCOPE_PARAM } from './compat.js';
import { withAccountCheck } from './interaction-policy.js';
import { introspectionAllowed, resourceServerInfo } from './resource-servers.js';
import { registeredClientId } from './dynamic-registration.js';
import type { KeystoreSet } from './keystore.js';
import type { ProviderKeys } from './keys.js';
import { CookieSigner } from '../cookie-signing.js';
import type { ProviderPages } from './pages.js';
import { errorsInEnglish } from '../error-page.js';

/** The provider's endpoints, at the addresses the service's clients are configured with. */
export const ROUTES = {
  authorization: '/login/oauth/authorize',
  token: '/login/oauth/access_token',
  revocation: '/login/oauth/revoke',
  introspection: '/login/oauth/introspect',
  userinfo: '/login/oauth/userinfo',
  jwks: '/login/oauth/jwks',
  end_session: '/login/oauth/logout',
  // RFC 8628: the device asks for a code here; the person enters it at the verification page.
  device_authorization: '/login/oauth/device/code',
  code_verification: '/login/device',
  // RFC 9126: the client pushes its authorization request here, then sends only its request_uri to authorize.
  pushed_authorization_request: '/login/oauth/par',
  // RFC 7591 (and RFC 7592 at /login/oauth/register/:clientId), open while an administrator allows it.
  registration: '/login/oauth/register',
} as const;

/**
 * The algorithms a DPoP proof may be signed with, at the token endpoint and at the API alike
 * (the library's default set; discovery's `dpop_signing_alg_values_supported`).
 */
export const DPOP_SIGNING_ALGS = ['ES256', 'Ed25519', 'EdDSA'] as const;

/** The provider's routes a browser navigates to: their errors are pages, every other route's are JSON. */
const PAGE_ROUTES = new Set(['authorization', 'resume', 'end_session', 'end_session_confirm', 'end_session_success', 'code_verification', 'device_resume']);

export interface ConfigurationDeps {
  config: Config;
  db: Knex;
  keys: ProviderKeys;
  /** The signing keys the provider starts with, the one that signs now first (keys.ts: keystoreSet). */
  signingKeys: KeystoreSet;
  /** Storage of every model but Client. */
  modelAdapter: (name: string) => Adapter;
  pages: ProviderPages;
  /** Revokes grants and what was issued under them (a dynamically registered client deleted itself). */
  revokeGrants: (grantIds: string[]) => Promise<void>;
}

/** Every oidc-provider option this service sets; the library's defaults hold for the rest. */
export function providerConfiguration(deps: ConfigurationDeps): Configuration {
  const { config, db, keys, pages } = deps;
  const clientAdapter = createClientAdapter(db, deps.revokeGrants);
  const findAccount = accountFinder(db);
  const secure = config.issuer.startsWith('https://');
  // Signed, httpOnly, sent on top-level navigations from other sites (the client's redirect back), Secure under https.
  const cookieOptions = { httpOnly: true, sameSite: 'lax' as const, secure, overwrite: true, signed: true };

  return {
    // Clients are the oauth_apps table (clients.ts); every other model goes to SQL or Redis.
    adapter: ((name: string) => (name === 'Client' ? clientAdapter : deps.modelAdapter(name))) as unknown as Configuration['adapter'],
    // No static clients: applications are registered by groups' owners and read through the adapter.
    clients: [],
    // Accounts are rows of the users table (accounts.ts).
    findAccount: (_ctx, sub) => findAccount(sub),
    // The claims each OpenID Connect scope releases, in the ID token and at userinfo alike.
    // The ID token's `amr` says how the person signed in (pwd; otp and mfa with two-factor);
    // `acr` (one factor "1", two "2") is released when a client asks with acr_values.
    acrValues: [...ACR_VALUES],
    claims: {
      acr: null,
      openid: ['sub', 'amr'],
      profile: ['preferred_username', 'name'],
      email: ['email', 'email_verified'],
    },
    // The service's scopes and no others: unknown ones are dropped from requests.
    scopes: Object.keys(SCOPES),
    // The ID token carries every claim the granted scopes allow, not only `sub`: clients such as
    // Auth.js build their user from the ID token alone, as Keycloak and most providers allow.
    conformIdTokenClaims: false,
    // The authorization code flow only.
    responseTypes: ['code'],
    routes: ROUTES,
    // Lifetimes of codes, tokens, sessions and grants (vocabulary.ts); a device code's is DEVICE_CODE_TTL_S.
    ttl: { ...TTL, DeviceCode: config.deviceFlow.codeTtlS },
    // A confidential client proves itself with its secret, in HTTP Basic or in the form; a public
    // client (native or single-page application, registered as such) sends only its client_id.
    clientAuthMethods: ['client_secret_basic', 'client_secret_post', 'none'],
    // What every application is (the adapter says the same of each): code flow with refresh tokens,
    // its secret in HTTP Basic by default, ID tokens signed with RS256.
    clientDefaults: {
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
      id_token_signed_response_alg: 'RS256',
    },
    // The adapter's own fields on each client: its active secrets' digests (read by
    // compareClientSecret, token-formats.ts), its group, and for a resource's introspection
    // credentials the resource they speak for; made by the adapter, so not validated.
    extraClientMetadata: {
      properties: ['secret_digests', 'group_id', 'resource_identifier'],
      validator() {},
    },
    features: {
      // Sign-in and consent are the service's own pages (interactions/).
      devInteractions: { enabled: false },
      // A client may revoke its own tokens, and no other client's.
      revocation: {
        enabled: true,
        allowedPolicy: async (_ctx, client, token) => token.clientId === client.clientId,
      },
      // A client may introspect its own tokens, and no other client's; a resource's server the
      // tokens bound to its resource, and no other's (resource-servers.ts).
      introspection: {
        enabled: true,
        allowedPolicy: introspectionAllowed,
      },
      // GET /login/oauth/logout?client_id=…&post_logout_redirect_uri=…&id_token_hint=…: the person
      // confirms, is signed out, and returns to one of the application's sign-out redirect URLs.
      // Both pages are the site's own (pages.ts).
      rpInitiatedLogout: {
        enabled: true,
        logoutSource: pages.logoutSource,
        postLogoutSuccessSource: pages.postLogoutSuccessSource,
      },
      // RFC 9449: a client that sends a DPoP proof to the token endpoint gets `token_type: DPoP`
      // and an access token bound to its key (`cnf.jkt`); a public client's refresh token is bound
      // too. The API checks the proof on every request with such a token (api/dpop.ts). The
      // provider issues no nonces; a proof's `iat` must be within five minutes and its `jti` is
      // remembered against replay (the ReplayDetection model, in SQL or Redis like the others).
      dPoP: { enabled: true, allowReplay: false },
      // RFC 9126 at /login/oauth/par: a client pushes its authorization request (authenticated
      // as at the token endpoint) and sends only the request_uri to authorize. An application
      // may require it (`require_pushed_authorization_requests`, clients.ts); no application
      // must. The redirect_uri of a pushed request is the registered one, as at authorize.
      pushedAuthorizationRequests: { enabled: true, requirePushedAuthorizationRequests: false, allowUnregisteredRedirectUris: false },
      // RFC 8628 for the applications that enable it (their grant_types, clients.ts): the device
      // gets a code at /login/oauth/device/code; the person enters it at /login/device, signs in
      // and consents through the flow's own pages (interactions/), and the device polls the token
      // endpoint. The code-entry, confirmation and result pages are the site's (pages.ts).
      deviceFlow: {
        enabled: true,
        // Eight characters from 20 consonants, shown as XXXX-XXXX: no vowels, so no words, and
        // nothing that reads as another character.
        charset: 'base-20',
        mask: '****-****',
        userCodeInputSource: pages.userCodeInputSource,
        userCodeConfirmSource: pages.userCodeConfirmSource,
        successSource: pages.deviceSuccessSource,
      },
      // RFC 6749 §4.4 for the confidential applications that allow it (their grant_types,
      // clients.ts): the application gets an `ho_` token with no user, for its own group in the
      // API; its scope is groups:read-only or groups:read-write (clientCredentialsScope, compat.ts).
      clientCredentials: { enabled: true },
      // Userinfo serves the claims of the granted OpenID Connect scopes.
      userinfo: { enabled: true },
      // RFC 8707: `resource=<identifier>` of a resource a group registered gets a token bound to
      // it, with its scopes, in its format (resource-servers.ts); an unknown one is invalid_target.
      // Without `resource`, tokens are for userinfo and the service's API, as ever. At the token
      // endpoint, a request that names no resource gets the granted one unless it asked for
      // openid (the library's rule), so a token for userinfo stays one.
      resourceIndicators: { enabled: true, getResourceServerInfo: resourceServerInfo(db) },
      // RFC 7591 Dynamic Client Registration of public clients, and RFC 7592 management with the
      // registration access token the answer carries (dynamic-registration.ts). Refused, and left
      // out of discovery, until an administrator turns it on; no initial access token is taken.
      registration: { enabled: true, initialAccessToken: false, issueRegistrationAccessToken: true, idFactory: registeredClientId },
      registrationManagement: { enabled: true, rotateRegistrationAccessToken: true },
      // OpenID Connect Back-Channel Logout 1.0 for applications with a back-channel logout URL
      // (clients.ts): logout tokens on the provider's own logout, and on the service's ways of
      // ending sessions (backchannel-logout.ts).
      backchannelLogout: { enabled: true },
    },
    // The library's outgoing requests: a loopback logout URL is reached outside production (backchannel-logout.ts).
    fetch: outgoingFetch(config.env === 'production') as Configuration['fetch'],
    // Tokens of a third-party server outlive the browser session that created them.
    expiresWithSession: async () => false,
    // A refresh token with every authorization code exchange, without asking for offline_access.
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    // Rotated on every use; presenting a rotated-out one revokes the grant (the library's reuse detection).
    rotateRefreshToken: true,
    // Every authorize request names its redirect_uri, even when the application has only one.
    allowOmittingSingleRegisteredRedirectUri: false,
    // PKCE is honoured whenever it is sent, and demanded of public clients only: they have no
    // secret, so the challenge is what ties the code to the app that asked for it. Confidential
    // clients prove themselves with their secret and may leave it out.
    pkce: { required: (_ctx, client) => client.clientAuthMethod === 'none' },
    // `state` is required, except alongside a PKCE challenge or an OpenID Connect nonce. `ignored_scope` carries the requested
    // scopes the library drops to the consent page, which names them (set only by compat.ts).
    extraParams: { state: requireStateWithoutPkce, [IGNORED_SCOPE_PARAM]: async () => {} },
    // The grant a new authorization reuses: one per user and application, whichever browser it was given in.
    loadExistingGrant: (ctx) => loadExistingGrant(db, ctx),
    // Sign-in and consent happen at /interaction/:uid (interactions/).
    interactions: {
      url: async (_ctx, interaction) => `/interaction/${interaction.uid}`,
      // A session whose account is gone or disabled asks for a sign-in again.
      policy: withAccountCheck(interactionsPolicy(config.requireVerifiedEmail)),
    },
    cookies: {
      // The keys every instance shares (keys.ts), so any instance reads another's cookies.
      keys: new CookieSigner(keys.cookieKeys),
      long: cookieOptions,
      short: cookieOptions,
      // The service's names (prefixed under https), which the site's pages read too.
      names: (({ session, interaction, resume }) => ({ session, interaction, resume }))(cookieNames(secure)),
    },
    // The signing keys stored in the database, the same on every instance (keys.ts); they are
    // replaced while the service runs when keys are rotated or retired (keystore.ts).
    jwks: { keys: deps.signingKeys.keys } as Configuration['jwks'],
    // RS256 wherever the provider signs; request objects (a feature left off) would also take PS256
    // and ES256; DPoP proofs, which clients sign, DPOP_SIGNING_ALGS.
    enabledJWA: {
      idTokenSigningAlgValues: ['RS256'],
      userinfoSigningAlgValues: ['RS256'],
      introspectionSigningAlgValues: ['RS256'],
      authorizationSigningAlgValues: ['RS256'],
      requestObjectSigningAlgValues: ['RS256', 'PS256', 'ES256'],
      dPoPSigningAlgValues: [...DPOP_SIGNING_ALGS],
    },
    // Errors are the site's error page on the routes a browser visits, JSON on every other.
    renderError: (ctx, out) => renderError(pages, ctx, out),
  };
}

/**
 * oidc-provider's prompts, where an earlier grant skips the consent page, except for two kinds of
 * request, which meet it every time (until the person answers it in this very flow):
 * - a public application's (a native or single-page app): with no secret, anyone can send its
 *   client_id, and a second program listening on its callback would get a code silently (RFC 8252
 *   §8.6); `prompt=none` is answered `consent_required`;
 * - the device flow's: anyone can ask for a device code, and a grant would let one click on
 *   "Connect" hand its poll a token; the consent page names what the device gets.
 * With REQUIRE_VERIFIED_EMAIL, an account whose address is not verified always meets the consent
 * step (where the page refuses it), even with a grant that would skip it.
 */
function interactionsPolicy(requireVerifiedEmail: boolean): interactionPolicy.Prompt[] {
  const policy = interactionPolicy.base();
  const consent = policy.get('consent')!;
  // After the library's `consent_prompt` (prompt=consent asked for), before every other reason:
  // the first reason found names the error prompt=none gets.
  const unanswered = (ctx: KoaContextWithOIDC) => !ctx.oidc.result?.consent;
  consent.checks.add(
    new interactionPolicy.Check('public_client', 'a public client is authorized by the person on every request', 'consent_required', (ctx) =>
      ctx.oidc.client?.clientAuthMethod === 'none' && unanswered(ctx)),
    1,
  );
  consent.checks.add(
    new interactionPolicy.Check('device_flow', 'a device is authorized by the person on every request', 'consent_required', (ctx) =>
      (ctx.oidc.route === 'code_verification' || ctx.oidc.route === 'device_resume') && unanswered(ctx)),
    2,
  );
  if (requireVerifiedEmail) {
    policy.get('consent')!.checks.add(
      new interactionPolicy.Check('email_not_verified', 'the e-mail address of the account is not verified', 'interaction_required', (ctx) => {
        const account = ctx.oidc.account as IdpAccount | undefined;
        return account !== undefined && !account.emailVerified;
      }),
    );
  }
  return policy;
}

/**
 * Checked after the redirect_uri is trusted, so a missing state is redirected back as an error
 * (at the PAR endpoint, which redirects nowhere, it is the endpoint's JSON error).
 * A request with a PKCE challenge may leave state out: the challenge already binds the code to
 * the browser that started the flow (RFC 9700 §2.1), and clients such as Auth.js rely on it by
 * default and send no state. So may an OpenID Connect request (scope `openid`) with a `nonce`:
 * the ID token carries it back, and the client that checks it refuses a code injected from
 * another browser (RFC 9700 §2.1 again), as grant does with `nonce: true` and no state. A nonce
 * without `openid` yields no ID token to carry it, so it exempts nothing.
 */
async function requireStateWithoutPkce(ctx: KoaContextWithOIDC, value: string | undefined): Promise<void> {
  const route = ctx.oidc.route;
  if ((route === 'authorization' || route === 'pushed_authorization_request') && !value && !hasOtherCsrfBinding(ctx.oidc.params)) {
    throw new errors.InvalidRequest("missing required parameter 'state'");
  }
}

/** A PKCE challenge, or a nonce on a request for an ID token: either binds the code to its flow. */
function hasOtherCsrfBinding(params: KoaContextWithOIDC['oidc']['params']): boolean {
  if (params?.code_challenge) return true;
  const scopes = typeof params?.scope === 'string' ? params.scope.split(' ') : [];
  return Boolean(params?.nonce) && scopes.includes('openid');
}

/**
 * The library's lookup (this flow's consent, else the session's grant for the client), then the
 * account's grant for the client in the user_grants table, so a person who consented in one
 * browser is not asked again in another. A grant of another account (say, the same browser signed
 * in as someone else) or of another client is never reused.
 */
async function loadExistingGrant(db: Knex, ctx: KoaContextWithOIDC): Promise<Grant | undefined> {
  const { oidc } = ctx;
  const clientId = oidc.client!.clientId;
  let grantId = oidc.result?.consent?.grantId ?? oidc.session?.grantIdFor(clientId);
  const accountId = oidc.session?.accountId;
  if (!grantId && accountId) {
    grantId = (await findUserGrant(db, Number(accountId), clientId))?.grant_id;
  }
  if (!grantId) return undefined;
  const grant = await oidc.provider.Grant.find(grantId);
  return grant && grant.accountId === accountId && grant.clientId === clientId ? grant : undefined;
}

/**
 * The library renders a page whenever the request prefers HTML; only the browser-facing routes
 * may answer with one. The token, introspection, revocation, userinfo… endpoints stay JSON.
 */
async function renderError(pages: ProviderPages, ctx: KoaContextWithOIDC, out: ErrorOut): Promise<void> {
  if (!PAGE_ROUTES.has(ctx.oidc?.route ?? '')) {
    ctx.type = 'json';
    ctx.body = out; // what the library itself answers a JSON client
    return;
  }
  const status = ctx.status >= 400 ? ctx.status : 400;
  if (out.error === 'invalid_redirect_uri') {
    await pages.redirectMismatch(ctx, status);
    return;
  }
  if (out.error === 'invalid_client') {
    await pages.unknownClient(ctx, status);
    return;
  }
  await pages.error(ctx, status, errorsInEnglish('notCompleted'), String(out.error_description ?? out.error ?? 'invalid request'));
}
