import type { Knex } from 'knex';
import Provider, { type Adapter, type KoaContextWithOIDC } from 'oidc-provider';
import type { Config } from '../config.js';
import { deleteUserGrantByGrantId } from '../db/grants.js';
import type { Limits } from '../services/limits.js';
import { authorizeQuery } from './authorize-params.js';
import { clientAuthLimit } from './client-auth-limit.js';
import { providerConfiguration, ROUTES } from './configuration.js';
import { providerFaults, recordProviderFault } from './faults.js';
import type { ProviderKeys } from './keys.js';
import { providerPages, type RenderPage } from './pages.js';
import { providerFormBodies, tokenResponseShape } from './token-endpoint.js';
import { applyTokenFormats } from './token-formats.js';

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
  const { config, db } = deps;
  // The pages read the session through the provider, which exists once the configuration is built.
  let provider: Provider | undefined;
  const pages = providerPages({ db, provider: () => provider!, render: deps.renderPage });
  provider = new Provider(config.issuer, providerConfiguration({ ...deps, pages }));

  applyTokenFormats(provider, { db, onError: deps.onError });

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
 * The logout request of a person who is not signed in: the library answers it with a page that
 * submits its form by inline script (lib/actions/end_session.js), which the site's CSP refuses.
 */
function isSignedOutLogoutPage(ctx: KoaContextWithOIDC): boolean {
  return ctx.oidc?.route === 'end_session' && ctx.status === 200 && !ctx.oidc.session?.accountId;
}
