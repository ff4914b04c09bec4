import type { Context, Next } from 'koa';
import { API_SCOPES, DEFAULT_SCOPE, isScope, knownScopes, splitScopes } from '../vocabulary.js';
import { FORM, parsedForm, setParsedForm, type FormParams } from './forms.js';

/**
 * The requests the service takes and the answers it gives as the service it replaces did, where
 * oidc-provider by itself would differ; clients written for that service rely on each. Several are
 * GitHub's OAuth habits, which that service kept. Every one is a step around the library's routes
 * (`provider.use`); createProvider sets the order they run in.
 */

type Query = Record<string, string | string[] | undefined>;

/**
 * Authorize without `scope` or `response_type`, with scopes separated by commas, or with only
 * scopes this service does not know. The curl flow in docs/oauth.md sends no response_type,
 * clients written for GitHub send `scope=groups:read-only,openid`, and some send GitHub's own
 * scopes (`scope=user`). No scope means groups:read-only, and so does a list of unknown scopes
 * only: the default is added beside them, the library drops the unknown ones, and the consent page
 * names them as ignored (IGNORED_SCOPE_PARAM). response_type defaults to `code`, the only one there is; commas become
 * the spaces RFC 6749 specifies. The library serves authorize over GET only, and reads the query
 * once this step has rewritten it.
 */
export function authorizeQueryDefaults(authorizationPath: string) {
  return async function defaultAuthorizeQuery(ctx: Context, next: Next): Promise<void> {
    // A pushed request (request_uri) carries its own parameters; they were checked when pushed.
    if (ctx.path === authorizationPath && ctx.method === 'GET' && ctx.query.request_uri === undefined) {
      const query = authorizeQuery(ctx.query);
      if (query) ctx.query = query;
    }
    await next();
  };
}

/**
 * The other two ways into an authorization, a pushed request (RFC 9126) and a device's (RFC
 * 8628), take the same parameters in a form body, and reach the same consent page: their forms
 * are read as authorizeQueryDefaults reads the authorize query (no scope means groups:read-only,
 * commas, unknown scopes named by IGNORED_SCOPE_PARAM, whose value a client sends itself is
 * dropped, so no words of the client's choosing reach the page). A device authorization has no
 * response_type, and none is added to it. Runs after readFormBodies, which parsed the form.
 */
export function authorizationFormDefaults(pushedRequestPath: string, deviceAuthorizationPath: string) {
  return async function defaultAuthorizationForm(ctx: Context, next: Next): Promise<void> {
    const entry = ctx.method !== 'POST' ? undefined : ctx.path === pushedRequestPath ? 'pushed' : ctx.path === deviceAuthorizationPath ? 'device' : undefined;
    const form = entry ? parsedForm(ctx) : undefined;
    if (form) {
      const normal = authorizeQuery(form, { responseType: entry === 'pushed' });
      if (normal) setParsedForm(ctx, withoutUndefined(normal));
    }
    await next();
  };
}

function withoutUndefined(params: Query): FormParams {
  return Object.fromEntries(Object.entries(params).filter(([, value]) => value !== undefined));
}

/**
 * The scopes of the request this service does not know, space separated, for the consent page to
 * name: the library drops them from the request's `scope` before the interaction sees it. Set by
 * this step only; a value the client sends itself is replaced or removed.
 */
export const IGNORED_SCOPE_PARAM = 'ignored_scope';

/**
 * The authorize request's query as the library should read it (see authorizeQueryDefaults). A
 * repeated parameter is left for the library to refuse. Returns undefined when the query needs
 * no change.
 */
function authorizeQuery(query: Query, options: { responseType: boolean } = { responseType: true }): Query | undefined {
  const { scope, response_type, [IGNORED_SCOPE_PARAM]: sentIgnored, ...rest } = query;
  // A request for a resource (RFC 8707) asks for that resource's scopes, which are not the
  // service's: they are the library's to check against the resource, and no default is added.
  if (rest.resource !== undefined) {
    if (sentIgnored === undefined && (response_type || !options.responseType)) return undefined;
    return { ...rest, scope, response_type: response_type ?? (options.responseType ? 'code' : undefined) };
  }
  const normalScope = typeof scope === 'string' ? splitScopes(scope).join(' ') : scope;
  const ignored = typeof normalScope === 'string' ? [...new Set(splitScopes(normalScope).filter((s) => !isScope(s)))].join(' ') : '';
  const changes: Query = {};
  if (ignored) changes[IGNORED_SCOPE_PARAM] = ignored;
  if (!normalScope) changes.scope = DEFAULT_SCOPE;
  else if (typeof normalScope === 'string' && knownScopes(normalScope) === undefined) changes.scope = `${normalScope} ${DEFAULT_SCOPE}`;
  else if (normalScope !== scope) changes.scope = normalScope;
  if (!response_type && options.responseType) changes.response_type = 'code';
  if (!Object.keys(changes).length && sentIgnored === undefined) return undefined;
  return { ...rest, scope, response_type, ...changes };
}

/**
 * The server's metadata at `/.well-known/oauth-authorization-server` (RFC 8414) as well as at
 * `/.well-known/openid-configuration`, the only address the library serves it at: OAuth clients
 * that are not OpenID Connect clients look for it there.
 */
export async function oauthMetadataAddress(ctx: Context, next: Next): Promise<void> {
  if (ctx.path === '/.well-known/oauth-authorization-server') ctx.path = '/.well-known/openid-configuration';
  await next();
}

/**
 * The library answers GET authorize requests (and their resumption after sign-in and consent)
 * with 303 See Other; this service sends clients back with 302 Found, as GitHub does.
 */
export async function authorizeRedirectsAs302(ctx: Context, next: Next): Promise<void> {
  await next();
  const route = (ctx as { oidc?: { route?: string } }).oidc?.route;
  if (ctx.status === 303 && ctx.method === 'GET' && (route === 'authorization' || route === 'resume')) ctx.status = 302;
}

/**
 * The token request with its parameters in the query string, as GitHub's OAuth documentation
 * shows it and as docs/oauth.md's `curl -X POST "…/access_token?client_id=…&code=…"` sends it: often
 * with no body, so with neither Content-Type nor Content-Length. Such a POST is taken as an empty
 * form (without a length the library would see no body at all), which readFormBodies then reads;
 * tokenParametersInQuery merges the query into it.
 */
export function tokenRequestWithoutBody(tokenPath: string) {
  return async function bodilessTokenRequestAsForm(ctx: Context, next: Next): Promise<void> {
    if (ctx.method === 'POST' && ctx.path === tokenPath && !ctx.get('content-type')) {
      ctx.req.headers['content-type'] = FORM;
      if (ctx.req.headers['content-length'] === undefined && ctx.req.headers['transfer-encoding'] === undefined) {
        ctx.req.headers['content-length'] = '0';
      }
    }
    await next();
  };
}

/**
 * After readFormBodies, the token request's query string joins its form (the query passed the
 * edge's control-character check, as every request's does). A parameter given in both places
 * with the same value counts once; with different values it is a duplicate, which the library
 * rejects as `invalid_request`. `grant_type` defaults to `authorization_code`, which GitHub-style
 * clients leave out, and a refresh request's scope keeps only the scopes this service knows
 * (see refreshScope).
 */
export function tokenParametersInQuery(tokenPath: string) {
  return async function mergeTokenQueryIntoForm(ctx: Context, next: Next): Promise<void> {
    const form = ctx.path === tokenPath ? parsedForm(ctx) : undefined;
    if (form) {
      const params = mergeParams(form, ctx.query as FormParams);
      params.grant_type ??= 'authorization_code';
      refreshScope(params);
      const refused = clientCredentialsScope(params);
      if (refused) {
        ctx.status = 400;
        ctx.set('Cache-Control', 'no-store');
        ctx.body = { error: 'invalid_scope', error_description: refused };
        return;
      }
      setParsedForm(ctx, params);
    }
    await next();
  };
}

/**
 * A grant the application may not use is `unauthorized_client` (RFC 6749 §5.2: "not authorized
 * to use this authorization grant type"); the library answers it at the token endpoint as
 * `invalid_request`. For the client credentials grant, the description says how to allow it.
 */
export function grantTypeRefusalAsUnauthorizedClient(tokenPath: string) {
  return async function unauthorizedGrantType(ctx: Context, next: Next): Promise<void> {
    await next();
    if (ctx.path !== tokenPath || ctx.status !== 400 || !ctx.body || typeof ctx.body !== 'object') return;
    const body = ctx.body as Record<string, unknown>;
    if (body.error !== 'invalid_request' || body.error_description !== 'requested grant type is not allowed for this client') return;
    const clientCredentials = parsedForm(ctx)?.grant_type === 'client_credentials';
    ctx.body = {
      ...body,
      error: 'unauthorized_client',
      error_description: clientCredentials
        ? 'this application may not act as itself: an owner of its group turns on Allow the application to act as itself (confidential applications only)'
        : 'this application may not use this grant type',
    };
  };
}

/**
 * An application acting as itself (`grant_type=client_credentials`) reaches the API and nothing
 * else: its scope is groups:read-only (also when it names none) or groups:read-write, space or
 * comma separated. Any other scope (openid, profile, email: there is no person) is refused with
 * `invalid_scope`, before the library reads the request. Returns the refusal's description.
 */
function clientCredentialsScope(params: FormParams): string | undefined {
  // For a resource (RFC 8707), the resource's scopes: the library checks them against it.
  if (params.grant_type !== 'client_credentials' || params.resource !== undefined) return undefined;
  if (params.scope === undefined || params.scope === '') {
    params.scope = DEFAULT_SCOPE;
    return undefined;
  }
  if (typeof params.scope !== 'string') return undefined; // repeated: the library refuses it (invalid_request)
  const scopes = [...new Set(splitScopes(params.scope))];
  const other = scopes.filter((scope) => !(API_SCOPES as readonly string[]).includes(scope));
  if (other.length) {
    return `the client credentials grant takes only ${API_SCOPES.join(' or ')}: an application acting as itself has no user, so not ${other.slice(0, 5).join(' ')}`.slice(0, 300);
  }
  params.scope = scopes.length ? scopes.join(' ') : DEFAULT_SCOPE;
  return undefined;
}

function mergeParams(body: FormParams, query: FormParams): FormParams {
  const merged: FormParams = { ...body };
  for (const [key, value] of Object.entries(query)) {
    const existing = merged[key];
    if (existing === undefined || existing === '' || existing === value) merged[key] = value;
    else merged[key] = ([] as string[]).concat(existing, value ?? []);
  }
  return merged;
}

/**
 * The library refuses a refresh whose `scope` names anything the refresh token lacks
 * (lib/actions/grants/refresh_token.js), unknown scopes included; authorize drops those. Here
 * they are dropped before the library reads the request, as authorize does: `offline_access`
 * (oidc-agent sends it on every refresh) and any other unknown scope no longer fail a refresh,
 * while a known scope beyond the grant still reaches the library's check and is refused with
 * `invalid_scope`. No known scope left means no `scope`: the refresh token's own scopes.
 */
function refreshScope(params: FormParams): void {
  if (params.grant_type !== 'refresh_token' || typeof params.scope !== 'string' || params.resource !== undefined) return;
  const scope = knownScopes(params.scope);
  if (scope === undefined) delete params.scope;
  else params.scope = scope;
}

/**
 * The token response carries `expire_in` (a string, which the first clients of this service read)
 * beside RFC 6749's `expires_in`, and `token_type` in their lower case, `bearer`.
 */
export async function tokenResponseWithExpireIn(ctx: Context, next: Next): Promise<void> {
  await next();
  if ((ctx as { oidc?: { route?: string } }).oidc?.route !== 'token' || ctx.status !== 200 || !ctx.body || typeof ctx.body !== 'object') return;
  const { access_token, token_type, expires_in, scope, refresh_token, id_token, ...rest } = ctx.body as Record<string, unknown>;
  ctx.body = {
    access_token,
    token_type: typeof token_type === 'string' && token_type.toLowerCase() === 'bearer' ? 'bearer' : token_type,
    scope,
    expire_in: String(expires_in),
    expires_in,
    ...(refresh_token ? { refresh_token } : {}),
    ...(id_token ? { id_token } : {}),
    ...rest,
  };
}
