import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import type { Adapter, AdapterPayload } from 'oidc-provider';
import { findClientWithSecrets, redirectUrisOf, signOutUrlsOf, touchSecret, type AppRow } from '../db/apps.js';
import { findResourceByClientId, isResourceClientId, type ResourceRow } from '../db/resources.js';
import { changeVersionsOf } from '../services/change-versions.js';
import { deleteDynamicClient, registrationProblem, storeDynamicClient } from '../services/client-registration/dynamic.js';
import { refusedMetadata } from './dynamic-registration.js';
import { now } from '../time.js';
import { isClientId } from '../ids.js';
import { lastUseRecorder } from '../last-use.js';
import { digest, digestEquals, isWellFormedToken } from '../tokens.js';

/**
 * Clients are the OAuth applications table. With Redis, each instance keeps the rows it read and
 * uses them only while the application's version in Redis is unchanged (see
 * `services/change-versions.ts`): an edited or deleted application, or a revoked secret, takes
 * effect at once on every instance. Without Redis every lookup reads the table. The metadata
 * carries the digests of the active secrets; the plain secrets exist nowhere.
 */
const PLACEHOLDER_SECRET = randomBytes(32).toString('base64url');

const CODE_GRANTS = ['authorization_code', 'refresh_token'];
/** RFC 8628's grant type, which an application opts into (Enable Device Flow). */
export const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
/** RFC 6749 §4.4: a confidential application acting as itself, which it opts into. */
export const CLIENT_CREDENTIALS_GRANT = 'client_credentials';

export function createClientAdapter(db: Knex, revokeGrants: (grantIds: string[]) => Promise<void>): Adapter {
  const unsupported = async (): Promise<never> => {
    throw new Error('clients are managed in the oauth_apps table, not through the adapter');
  };
  const cached = changeVersionsOf(db)?.cache((clientId) => findClientWithSecrets(db, clientId));
  const cachedResource = changeVersionsOf(db)?.cache((clientId) => findResourceByClientId(db, clientId));
  return {
    async find(clientId: string): Promise<AdapterPayload | undefined> {
      // Longer than the column: no such client, and no query.
      if (!isClientId(clientId)) return undefined;
      if (isResourceClientId(clientId)) {
        const resource = cachedResource ? await cachedResource.get(clientId, [`app:${clientId}`]) : await findResourceByClientId(db, clientId);
        return resource ? resourceServerClient(resource) : undefined;
      }
      const found = cached ? await cached.get(clientId, [`app:${clientId}`]) : await findClientWithSecrets(db, clientId);
      if (!found) return undefined;
      const { app, secrets } = found;
      // A public client (native or single-page application) has no secret and does not
      // authenticate at the token endpoint; the provider then requires PKCE (configuration.ts).
      const authentication = app.client_type === 'public'
        ? { token_endpoint_auth_method: 'none' }
        // The placeholder is required by the library for client_secret_basic/post; never compared (see compareClientSecret).
        : { token_endpoint_auth_method: 'client_secret_basic', client_secret: PLACEHOLDER_SECRET };
      return {
        client_id: app.client_id,
        ...authentication,
        application_type: isNativeLoopback(app) ? 'native' : 'web',
        client_name: app.name,
        client_uri: app.homepage_url,
        redirect_uris: redirectUrisOf(app),
        // RP-initiated logout returns only to one of these, matched exactly (a web client's rule).
        post_logout_redirect_uris: signOutUrlsOf(app),
        // The device grant only for an application that enabled it: without it, the device
        // authorization endpoint answers unauthorized_client (the library's grant type check).
        grant_types: [
          ...CODE_GRANTS,
          ...(app.device_flow ? [DEVICE_CODE_GRANT] : []),
          // Only a confidential application that allows it: without it, unauthorized_client.
          ...(app.allow_client_credentials && app.client_type !== 'public' ? [CLIENT_CREDENTIALS_GRANT] : []),
        ],
        response_types: ['code'],
        require_pushed_authorization_requests: Boolean(app.require_pushed_authorization_requests),
        id_token_signed_response_alg: 'RS256',
        // Back-Channel Logout 1.0: logout tokens go here when a session of the application ends;
        // they always carry the session's sid, so the application ends that session only.
        ...(app.backchannel_logout_uri ? { backchannel_logout_uri: app.backchannel_logout_uri, backchannel_logout_session_required: true } : {}),
        // Not for a self-registered client, whose metadata its registration access token reads (RFC 7592).
        ...(app.registered_by ? {} : { secret_digests: secrets.map((s) => `${s.id}:${s.digest}`), group_id: app.group_id }),
      } as AdapterPayload;
    },
    // Dynamic Client Registration (RFC 7591) and its updates (RFC 7592): the library validated the
    // metadata; the service's own rules are checked here, then the client is kept in oauth_apps.
    async upsert(clientId: string, payload: AdapterPayload): Promise<void> {
      const problem = registrationProblem(payload as Record<string, unknown>);
      if (problem) throw refusedMetadata(problem);
      await storeDynamicClient(db, clientId, payload as Record<string, unknown>);
    },
    // RFC 7592 DELETE, with the client's registration access token: the client and its grants go.
    async destroy(clientId: string): Promise<void> {
      await revokeGrants(await deleteDynamicClient(db, clientId, null));
    },
    findByUid: unsupported,
    findByUserCode: unsupported,
    consume: unsupported,
    revokeByGrantId: unsupported,
  };
}

/**
 * A resource's server as a client of the introspection endpoint, and of nothing else: it
 * authenticates with its own secret (HTTP Basic or the form), has no grant, no response type and
 * no redirect, so authorize and the token endpoint refuse it, and may introspect the tokens bound
 * to its resource only (resource-servers.ts).
 */
function resourceServerClient(resource: ResourceRow): AdapterPayload {
  return {
    client_id: resource.client_id,
    client_secret: PLACEHOLDER_SECRET,
    token_endpoint_auth_method: 'client_secret_basic',
    client_name: resource.name,
    grant_types: [],
    response_types: [],
    redirect_uris: [],
    // No id: a resource's secret has no last-use record.
    secret_digests: [resource.secret_digest],
    group_id: resource.group_id,
    resource_identifier: resource.identifier,
  } as AdapterPayload;
}

/** The loopback names the library treats alike (lib/consts/client_attributes.js's LOOPBACKS). */
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * A public application whose callback is http on the loopback address: a native app (RFC 8252
 * §7.3) that listens on whatever port is free when it starts. As an `application_type: 'native'`
 * client the library matches such a callback on any port (Client#redirectAllowed), and asks the
 * person to consent on every authorization (the consent prompt's `native_client_prompt`). The
 * library accepts a native client only when none of its URLs is https on a loopback name, which
 * the callback rules allow a web application: such an application stays `web`. A `localhost`
 * callback, refused for new public applications, keeps matching exactly.
 */
function isNativeLoopback(app: Pick<AppRow, 'client_type' | 'callback_url' | 'sign_out_urls' | 'redirect_uris'>): boolean {
  if (app.client_type !== 'public') return false;
  // A self-registered client is native when none of its redirect URIs is https (loopback or private-use scheme only).
  if (app.redirect_uris) return redirectUrisOf(app).every((uri) => !uri.startsWith('https:'));
  const callback = URL.parse(app.callback_url);
  if (!callback || callback.protocol !== 'http:' || !['127.0.0.1', '[::1]'].includes(callback.hostname)) return false;
  return signOutUrlsOf(app).every((url) => {
    const parsed = URL.parse(url);
    return !(parsed?.protocol === 'https:' && LOOPBACK_HOSTS.has(parsed.hostname));
  });
}

/**
 * Replaces the library's plain comparison: the presented secret's SHA-256 is compared with every
 * active secret's digest in constant time (all of them, match or not), and the matching secret's
 * last use is recorded at most once a minute per instance, so the token endpoint does not write
 * on every exchange.
 */
export function hashedSecretComparison(db: Knex, onError: (err: unknown) => void) {
  const decoy = digest('hs_decoy');
  const recordUse = lastUseRecorder(onError);
  return async function compareClientSecret(this: { secret_digests?: string[] }, actual: string): Promise<boolean> {
    const presented = typeof actual === 'string' && isWellFormedToken(actual, 'hs_') ? digest(actual) : decoy;
    let matchedId: number | undefined;
    let matchedUnrecorded = false;
    for (const entry of this.secret_digests ?? []) {
      // `id:digest` for an application's secret, whose last use is recorded; `digest` alone for a resource's.
      const [id, stored] = entry.includes(':') ? (entry.split(':') as [string, string]) : [undefined, entry];
      if (digestEquals(presented, stored) && presented !== decoy) {
        if (id === undefined) matchedUnrecorded = true;
        else matchedId = Number(id);
      }
    }
    if (matchedUnrecorded) return true;
    if (matchedId === undefined) return false;
    const secretId = matchedId;
    recordUse(secretId, () => touchSecret(db, secretId, now()));
    return true;
  };
}
