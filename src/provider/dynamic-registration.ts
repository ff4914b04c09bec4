import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import type { Context, Next } from 'koa';
import { errors, type KoaContextWithOIDC } from 'oidc-provider';
import { inWords, RetryLaterError } from '../errors.js';
import { KEPT_METADATA, nativeRedirects, registering } from '../services/client-registration/dynamic.js';
import { clientRegistrationSettings, registrationGroup } from '../services/client-registration/settings.js';
import type { Limits } from '../services/limits.js';

/**
 * Dynamic Client Registration (RFC 7591) at /login/oauth/register, and its management (RFC 7592)
 * with the registration access token the answer carries. The library runs both; the client lookup
 * keeps the clients in oauth_apps (clients.ts, services/client-registration/dynamic.ts).
 *
 * Registration is open only while an administrator turns it on (Admin → Client registration):
 * otherwise it is refused, and discovery does not name the endpoint. Discovery also says
 * `client_id_metadata_document_supported` while metadata documents are accepted. Each registration takes a
 * point of the per-address limit before anything is read. A client is always public: whatever
 * `token_endpoint_auth_method` it asks for is replaced by `none` (RFC 7591 §3.2.1 lets the server
 * replace a value, and the answer says what was kept), so it uses PKCE with S256.
 */
export function registrationGate(deps: { db: Knex; limits: Pick<Limits, 'takeClientRegistration'> }, paths: { registration: string; discovery: readonly string[] }) {
  return async function gateRegistration(ctx: Context, next: Next): Promise<void> {
    if (paths.discovery.includes(ctx.path) && ctx.method === 'GET') {
      await next();
      if (ctx.status !== 200 || !ctx.body || typeof ctx.body !== 'object') return;
      const settings = await clientRegistrationSettings(deps.db);
      const metadata = ctx.body as Record<string, unknown>;
      if (!settings.dynamicRegistration) delete metadata.registration_endpoint;
      // draft-ietf-oauth-client-id-metadata-document: how a client learns it may use its document's URL as client_id.
      if (settings.metadataDocuments) metadata.client_id_metadata_document_supported = true;
      return;
    }
    if (ctx.path !== paths.registration || ctx.method !== 'POST') return next();
    const group = await registrationGroup(deps.db, 'dynamicRegistration');
    ctx.set('Cache-Control', 'no-store');
    if (!group) {
      ctx.status = 403;
      ctx.body = { error: 'access_denied', error_description: 'this server does not accept dynamic client registration' };
      return;
    }
    try {
      await deps.limits.takeClientRegistration(ctx.ip);
    } catch (err) {
      if (!(err instanceof RetryLaterError)) throw err;
      ctx.status = 429;
      ctx.set('Retry-After', String(err.retryAfterS));
      ctx.body = { error: 'rate_limited', error_description: `too many clients were registered from your address; try again ${inWords(err.retryAfterS)}` };
      return;
    }
    await registering.run({ ip: ctx.ip, groupId: group.id }, next);
  };
}

/**
 * The library's idFactory, called with the registration request before its metadata is read:
 * the metadata is first made what the service keeps (a public client of the code flow; only the
 * fields in KEPT_METADATA), so the answer states exactly that. The id is an application's: 20 hex digits.
 */
export function registeredClientId(ctx: KoaContextWithOIDC): string {
  const body = (ctx.oidc.body ?? {}) as Record<string, unknown>;
  for (const key of Object.keys(body)) {
    if (!(KEPT_METADATA as readonly string[]).includes(key)) delete body[key];
  }
  body.token_endpoint_auth_method = 'none';
  body.grant_types = ['authorization_code', 'refresh_token'];
  body.response_types = ['code'];
  const uris = Array.isArray(body.redirect_uris) ? body.redirect_uris.filter((u): u is string => typeof u === 'string') : [];
  body.application_type = nativeRedirects(uris) ? 'native' : 'web';
  return randomBytes(10).toString('hex');
}

/** The library's error for a registration's metadata the service does not take (invalid_client_metadata or invalid_redirect_uri). */
export function refusedMetadata(problem: { field: string; message: string }): Error {
  return problem.field === 'redirect_uris' ? new errors.InvalidRedirectUri(problem.message) : new errors.InvalidClientMetadata(problem.message);
}
