import type { Knex } from 'knex';
import type { Context } from 'koa';
import Provider, { type Adapter, type KoaContextWithOIDC } from 'oidc-provider';
import type { Config } from '../config.js';
import { deleteUserGrantByGrantId } from '../db/grants.js';
import type { Limits } from '../services/limits.js';
import type { SessionIndex } from '../services/sessions.js';
import { clientAuthLimit } from './client-auth-limit.js';
import {
  authorizationFormDefaults,
  authorizeQueryDefaults,
  authorizeRedirectsAs302,
  oauthMetadataAddress,
  grantTypeRefusalAsUnauthorizedClient, tokenParametersInQuery,
  tokenRequestWithoutBody,
  tokenResponseWithExpireIn,
} from './compat.js';
import { providerConfiguration, ROUTES } from './configuration.js';
import { deviceAuthorizationResponse, deviceCodeEntryLimit, devicePollInterval } from './device-flow.js';
import { errorsWithDescriptions } from './error-descriptions.js';
import { providerFaults, recordProviderFault } from './faults.js';
import { providerFormBodies } from './forms.js';
import { keystoreSet, type ProviderKeys } from './keys.js';
import { metadataDocumentClients } from './metadata-document-clients.js';
import { registrationGate } from './dynamic-registration.js';
import { revokeGrant } from '../services/grants.js';
import { providerKeystore } from './keystore.js';
import { providerPages, scriptlessSignedOutLogout, type RenderPage } from './pages.js';
import { indexProviderSessions } from './session-index.js';
import { applyTokenFormats } from './token-formats.js';

export interface ProviderDeps {
  config: Config;
  db: Knex;
  keys: ProviderKeys;
  limits: Limits;
  /** Account settings → Sessions: the sessions the flow signs in and out. */
  sessionIndex: SessionIndex;
  /** Storage of every model but Client: the SQL adapter, or Redis when REDIS_URL is set. */
  modelAdapter: (name: string) => Adapter;
  /** Renders one of the site's pages (views/) as the response: the provider's errors and logout pages. */
  renderPage: RenderPage;
  onError: (err: unknown) => void;
}

export type { Provider };

/**
 * oidc-provider as this service runs it: its configuration (configuration.ts), the service's
 * token formats (token-formats.ts), the steps around its routes, outermost first, and what the
 * service does when the library reports an event.
 */
export function createProvider(deps: ProviderDeps): Provider {
  const { config, db, onError } = deps;
  // The pages read the session through the provider, which exists once the configuration is built.
  const pages = providerPages({ db, provider: () => provider, render: deps.renderPage });
  const signingKeys = keystoreSet(deps.keys.signing, Date.now());
  const revokeGrants = async (grantIds: string[]) => {
    for (const grantId of grantIds) await revokeGrant(provider, grantId);
  };
  const provider = new Provider(config.issuer, providerConfiguration({ ...deps, pages, signingKeys, revokeGrants }));
  // Checks that the library's keystore is where this service changes it, and publishes the JWKS.
  providerKeystore(provider, signingKeys);
  applyTokenFormats(provider, { db, onError });

  const renderErrorPage = (ctx: Context, status: number, title: string, message: string) =>
    deps.renderPage(ctx as KoaContextWithOIDC, 'error', { title, message, status }, status);
  provider.use(providerFaults(renderErrorPage, onError));
  provider.use(errorsWithDescriptions);
  provider.use(tokenRequestWithoutBody(ROUTES.token));
  provider.use(providerFormBodies());
  provider.use(tokenParametersInQuery(ROUTES.token));
  provider.use(registrationGate({ db, limits: deps.limits }, { registration: ROUTES.registration, discovery: ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server'] }));
  provider.use(metadataDocumentClients(
    { db, limits: deps.limits, allowPrivate: config.clientMetadata.allowPrivate, ca: config.clientMetadata.ca },
    { authorization: ROUTES.authorization, others: [ROUTES.token, ROUTES.pushed_authorization_request, ROUTES.device_authorization, ROUTES.revocation] },
    async (ctx, status, message) => renderErrorPage(ctx, status, 'The application cannot be used', message),
  ));
  provider.use(grantTypeRefusalAsUnauthorizedClient(ROUTES.token));
  provider.use(clientAuthLimit(deps.limits, [ROUTES.token, ROUTES.revocation, ROUTES.introspection, ROUTES.device_authorization, ROUTES.pushed_authorization_request]));
  provider.use(devicePollInterval(deps.limits, ROUTES.token));
  provider.use(deviceCodeEntryLimit(deps.limits, {
    path: ROUTES.code_verification,
    sessionCookie: provider.cookieName('session'),
    refuse: (ctx, err) => renderErrorPage(ctx, err.status, 'Too many codes', err.message),
  }));
  provider.use(deviceAuthorizationResponse(ROUTES.device_authorization, config.deviceFlow.pollIntervalS));
  provider.use(authorizeQueryDefaults(ROUTES.authorization));
  provider.use(authorizationFormDefaults(ROUTES.pushed_authorization_request, ROUTES.device_authorization));
  provider.use(oauthMetadataAddress);
  provider.use(authorizeRedirectsAs302);
  provider.use(scriptlessSignedOutLogout(pages));
  provider.use(tokenResponseWithExpireIn);
  provider.use(indexProviderSessions(deps.sessionIndex, onError));

  // The route's own error handler already answered 500; providerFaults corrects the answer.
  provider.on('server_error', (ctx, err) => recordProviderFault(ctx, err, onError));
  // The library revokes a whole grant on its own (a used code or refresh token presented again,
  // a refresh token revoked by its client): it leaves Account settings → Authorized applications.
  provider.on('grant.revoked', (_ctx, grantId: string) => {
    deleteUserGrantByGrantId(db, grantId).catch((err: unknown) => onError(err));
  });
  return provider;
}
