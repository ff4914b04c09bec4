import type { Knex } from 'knex';
import Provider, { errors, interactionPolicy, type Adapter, type Configuration, type KoaContextWithOIDC } from 'oidc-provider';
import type { Config } from '../config.js';
import { deleteUserGrantByGrantId, findUserGrant } from '../db/grants.js';
import { generateToken } from '../tokens.js';
import type { Limits } from '../services/limits.js';
import { SCOPES, TTL } from '../vocabulary.js';
import { cookieNames } from '../cookie-names.js';
import { findAccount, type IdpAccount } from './accounts.js';
import { authorizeQuery } from './authorize-params.js';
import { clientAuthLimit } from './client-auth-limit.js';
import { createClientAdapter, hashedSecretComparison } from './clients.js';
import { providerFaults, recordProviderFault } from './faults.js';
import type { ProviderKeys } from './keys.js';
import { providerPages, type RenderPage } from './pages.js';
import { providerFormBodies, tokenResponseShape } from './token-endpoint.js';

export const ROUTES = {
  authorization: '/login/oauth/authorize',
  token: '/login/oauth/access_token',
  revocation: '/login/oauth/revoke',
  introspection: '/login/oauth/introspect',
  userinfo: '/login/oauth/userinfo',
  jwks: '/login/oauth/jwks',
  end_session: '/login/oauth/logout',
} as const;


/** The provider's routes a browser navigates to: their errors are pages, every other route's are JSON. */
const PAGE_ROUTES = new Set(['authorization', 'resume', 'end_session', 'end_session_confirm', 'end_session_success']);

export interface ProviderDeps {
  config: Config;
  db: Knex;
  keys: ProviderKeys;
  limits: Limits;
  /** Storage of every model but Client: the SQL adapter, or Redis when REDIS_URL is set. */
  modelAdapter: (name: string) => Adapter;
  /** Renders one of the site's pages (views/) as the response: the provider's errors and logout pages. */
  renderPage: RenderPage;
  onError: (err: unknown) => void;
}

export type { Provider };

export function createProvider(deps: ProviderDeps): Provider {
  const { config, db, keys } = deps;
  const clientAdapter = createClientAdapter(db);
  const secure = config.issuer.startsWith('https://');
  const cookieOptions = { httpOnly: true, sameSite: 'lax' as const, secure, overwrite: true, signed: true };
  // The pages read the session through the provider, which exists once the configuration is built.
  let provider: Provider | undefined;
  const pages = providerPages({ db, provider: () => provider!, render: deps.renderPage });

  const configuration: Configuration = {
    adapter: ((name: string) => (name === 'Client' ? clientAdapter : deps.modelAdapter(name))) as unknown as Configuration['adapter'],
    clients: [],
    findAccount: (_ctx, sub) => findAccount(db, sub),
    claims: {
      openid: ['sub'],
      profile: ['preferred_username', 'name'],
      email: ['email', 'email_verified'],
    },
    scopes: Object.keys(SCOPES),
    // The ID token carries every claim the granted scopes allow (profile, email), not only `sub`:
    // clients such as Auth.js build their user from the ID token alone, as Keycloak and most
    // providers allow. Userinfo still serves the same claims.
    conformIdTokenClaims: false,
    responseTypes: ['code'],
    routes: ROUTES,
    ttl: TTL,
    clientAuthMethods: ['client_secret_basic', 'client_secret_post'],
    clientDefaults: {
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
      id_token_signed_response_alg: 'RS256',
    },
    extraClientMetadata: {
      properties: ['secret_digests', 'group_id'],
      validator() {},
    },
    features: {
      devInteractions: { enabled: false },
      revocation: {
        enabled: true,
        allowedPolicy: async (_ctx, client, token) => token.clientId === client.clientId,
      },
      introspection: {
        enabled: true,
        allowedPolicy: async (_ctx, client, token) => token.clientId === client.clientId,
      },
      // GET /login/oauth/logout?client_id=…&post_logout_redirect_uri=…&id_token_hint=…: the person
      // confirms, is signed out, and returns to one of the application's sign-out redirect URLs.
      rpInitiatedLogout: {
        enabled: true,
        logoutSource: pages.logoutSource,
        postLogoutSuccessSource: pages.postLogoutSuccessSource,
      },
      // On by default in v9 and so advertised in discovery, but our API does not verify DPoP
      // proofs (a DPoP-bound token would pass as a plain bearer) and nothing here needs PAR:
      // off, and not advertised, until each works end to end.
      dPoP: { enabled: false },
      pushedAuthorizationRequests: { enabled: false },
      userinfo: { enabled: true },
    },
    // Tokens of a third-party server outlive the browser session that created them.
    expiresWithSession: async () => false,
    // The contract: a refresh token with every authorization code exchange, rotated on every
    // use; presenting a rotated-out one revokes the grant (the library's reuse detection).
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    rotateRefreshToken: true,
    allowOmittingSingleRegisteredRedirectUri: false,
    pkce: { required: () => false },
    extraParams: {
      // Checked after the redirect_uri is trusted, so a missing state is redirected back as an error.
      // A request with a PKCE challenge may leave state out: the challenge already binds the
      // code to the browser that started the flow (RFC 9700 §2.1), and clients such as Auth.js
      // rely on it by default and send no state.
      async state(ctx, value) {
        if (ctx.oidc.route === 'authorization' && !value && !ctx.oidc.params?.code_challenge) {
          throw new errors.InvalidRequest("missing required parameter 'state'");
        }
      },
    },
    async loadExistingGrant(ctx) {
      const { oidc } = ctx;
      const clientId = oidc.client!.clientId;
      let grantId = oidc.result?.consent?.grantId ?? oidc.session?.grantIdFor(clientId);
      const accountId = oidc.session?.accountId;
      if (!grantId && accountId) {
        grantId = (await findUserGrant(db, Number(accountId), clientId))?.grant_id;
      }
      if (!grantId) return undefined;
      const grant = await oidc.provider.Grant.find(grantId);
      // A grant of another account (say, the same browser signed in as someone else) is never reused.
      return grant && grant.accountId === accountId && grant.clientId === clientId ? grant : undefined;
    },
    interactions: {
      url: async (_ctx, interaction) => `/interaction/${interaction.uid}`,
      policy: interactionsPolicy(config.requireVerifiedEmail),
    },
    cookies: {
      keys: keys.cookieKeys,
      long: cookieOptions,
      short: cookieOptions,
      names: (({ session, interaction, resume }) => ({ session, interaction, resume }))(cookieNames(secure)),
    },
    jwks: keys.jwks as Configuration['jwks'],
    enabledJWA: {
      idTokenSigningAlgValues: ['RS256'],
      userinfoSigningAlgValues: ['RS256'],
      introspectionSigningAlgValues: ['RS256'],
      authorizationSigningAlgValues: ['RS256'],
      requestObjectSigningAlgValues: ['RS256', 'PS256', 'ES256'],
    },
    async renderError(ctx, out) {
      // The library renders a page whenever the request prefers HTML; only the browser-facing routes
      // may answer with one. The token, introspection, revocation, userinfo… endpoints stay JSON.
      if (!PAGE_ROUTES.has(ctx.oidc?.route ?? '')) {
        ctx.type = 'json';
        ctx.body = out; // what the library itself answers a JSON client
        return;
      }
      const status = ctx.status >= 400 ? ctx.status : 400;
      await pages.error(ctx, status, 'The request could not be completed', String(out.error_description ?? out.error ?? 'invalid request'));
    },
  };

  provider = new Provider(config.issuer, configuration);

  // Token values in the contract's format (ho_/hr_ + 30 base62 + CRC32), made by the models themselves.
  const AccessTokenProto = provider.AccessToken.prototype as unknown as { generateTokenId(): string; format?: string };
  AccessTokenProto.generateTokenId = function generateAccessTokenId(this: { format?: string }) {
    this.format = 'opaque';
    return generateToken('ho_');
  };
  (provider.RefreshToken.prototype as unknown as { generateTokenId(): string }).generateTokenId = () => generateToken('hr_');
  (provider.Client.prototype as unknown as { compareClientSecret: unknown }).compareClientSecret = hashedSecretComparison(db, deps.onError);

  provider.use(
    providerFaults(
      (ctx, status, title, message) => deps.renderPage(ctx as KoaContextWithOIDC, 'error', { title, message, status }, status),
      deps.onError,
    ),
  );
  provider.use(providerFormBodies(ROUTES.token));
  provider.use(clientAuthLimit(deps.limits, [ROUTES.token, ROUTES.revocation, ROUTES.introspection]));
  provider.use(async function contractDefaults(ctx, next) {
    if (ctx.path === ROUTES.authorization && ctx.method === 'GET') {
      const query = authorizeQuery(ctx.query);
      if (query) ctx.query = query;
    }
    if (ctx.path === '/.well-known/oauth-authorization-server') ctx.path = '/.well-known/openid-configuration';
    await next();
    // The library answers GET authorize requests with 303; clients are promised a 302 (as GitHub answers).
    const route = (ctx as { oidc?: { route?: string } }).oidc?.route;
    if (ctx.status === 303 && ctx.method === 'GET' && (route === 'authorization' || route === 'resume')) ctx.status = 302;
    if (isSignedOutLogoutPage(ctx as KoaContextWithOIDC)) pages.signedOutLogout(ctx as KoaContextWithOIDC);
    else tokenResponseShape(ctx as never);
  });

  // The route's own error handler already answered 500; providerFaults corrects the answer.
  provider.on('server_error', (ctx, err) => recordProviderFault(ctx, err, deps.onError));
  // The library revokes a whole grant on its own (a used code or refresh token presented again,
  // a refresh token revoked by its client): it leaves Account settings → Authorized applications.
  provider.on('grant.revoked', (_ctx, grantId: string) => {
    deleteUserGrantByGrantId(db, grantId).catch((err: unknown) => deps.onError(err));
  });
  return provider;
}

/**
 * oidc-provider's prompts; with REQUIRE_VERIFIED_EMAIL, an account whose address is not verified
 * always meets the consent step (where the page refuses it), even with a grant that would skip it.
 */
function interactionsPolicy(requireVerifiedEmail: boolean): interactionPolicy.Prompt[] {
  const policy = interactionPolicy.base();
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
 * The logout request of a person who is not signed in: the library answers it with a page that
 * submits its form by inline script (lib/actions/end_session.js), which the site's CSP refuses.
 */
function isSignedOutLogoutPage(ctx: KoaContextWithOIDC): boolean {
  return ctx.oidc?.route === 'end_session' && ctx.status === 200 && !ctx.oidc.session?.accountId;
}
