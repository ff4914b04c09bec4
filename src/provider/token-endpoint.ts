import * as querystring from 'node:querystring';
import type { Context, Next } from 'koa';
import { knownScopes } from '../vocabulary.js';

/**
 * The seed's clients send the token request's parameters in the query string, often with an
 * empty body; RFC 6749 clients send a form body. This pre-step reads the form body itself,
 * merges the query string into it and hands the result to oidc-provider, which reads an
 * already-parsed `req.body` (lib/shared/selective_body.js). A parameter given in both places
 * with the same value counts once; with different values it is a duplicate, which the library
 * rejects as `invalid_request`. `grant_type` defaults to `authorization_code`, and a refresh
 * request's scope keeps only the scopes this service knows (see `refreshScope`).
 */
const BODY_LIMIT = 56 * 1024;
const FORM = 'application/x-www-form-urlencoded';

type Params = Record<string, string | string[] | undefined>;

async function readForm(ctx: Context): Promise<Params | 'too-large'> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req) {
    size += (chunk as Buffer).length;
    if (size > BODY_LIMIT) return 'too-large';
    chunks.push(chunk as Buffer);
  }
  return querystring.parse(Buffer.concat(chunks).toString('utf8')) as Params;
}

export function mergeParams(body: Params, query: Params): Params {
  const merged: Params = { ...body };
  for (const [key, value] of Object.entries(query)) {
    const existing = merged[key];
    if (existing === undefined || existing === '' || existing === value) merged[key] = value;
    else merged[key] = ([] as string[]).concat(existing, value ?? []);
  }
  return merged;
}

/**
 * On the token route: the body and the query string merged, as described above. On the other
 * routes that authenticate clients (revocation, introspection), the form body alone, read here
 * too so the client-authentication limit knows the client_id before the library runs.
 */
export function tokenRequestParams(tokenPath: string, otherFormPaths: readonly string[] = []) {
  return async function acceptQueryParameters(ctx: Context, next: Next): Promise<void> {
    const isToken = ctx.path === tokenPath;
    if (ctx.method !== 'POST' || !(isToken || otherFormPaths.includes(ctx.path))) return next();
    const type = ctx.get('content-type');
    // Other content types are left to the library, which answers them with invalid_request.
    if (type && !ctx.is(FORM)) return next();
    const body = await readForm(ctx);
    if (body === 'too-large') {
      ctx.status = 413;
      ctx.set('Cache-Control', 'no-store');
      ctx.body = { error: 'invalid_request', error_description: 'the request body is too large' };
      return;
    }
    const params = isToken ? mergeParams(body, ctx.query as Params) : body;
    if (isToken) {
      params.grant_type ??= 'authorization_code';
      refreshScope(params);
    }
    (ctx.req as typeof ctx.req & { body?: Params }).body = params;
    ctx.req.headers['content-type'] = FORM;
    // A bodiless POST (the README's `curl -X POST "…/access_token?client_id=…"`) carries neither
    // Content-Length nor Transfer-Encoding, and without one the library sees no body at all.
    if (ctx.req.headers['content-length'] === undefined && ctx.req.headers['transfer-encoding'] === undefined) {
      ctx.req.headers['content-length'] = '0';
    }
    return next();
  };
}

/**
 * The library refuses a refresh whose `scope` names anything the refresh token lacks
 * (lib/actions/grants/refresh_token.js), unknown scopes included; authorize drops those. Here
 * they are dropped before the library reads the request, as authorize does: `offline_access`
 * (oidc-agent sends it on every refresh) and any other unknown scope no longer fail a refresh,
 * while a known scope beyond the grant still reaches the library's check and is refused with
 * `invalid_scope`. No known scope left means no `scope`: the refresh token's own scopes.
 */
export function refreshScope(params: Params): void {
  if (params.grant_type !== 'refresh_token' || typeof params.scope !== 'string') return;
  const scope = knownScopes(params.scope);
  if (scope === undefined) delete params.scope;
  else params.scope = scope;
}

/** Adds the seed's `expire_in` (a string) beside RFC 6749's `expires_in`, and the seed's lower-case `bearer`. */
export function tokenResponseShape(ctx: Context & { oidc?: { route?: string } }): void {
  if (ctx.oidc?.route !== 'token' || ctx.status !== 200 || !ctx.body || typeof ctx.body !== 'object') return;
  const body = ctx.body as Record<string, unknown>;
  const { access_token, token_type, expires_in, scope, refresh_token, id_token, ...rest } = body;
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

/** The client_id a client-authenticating request names: HTTP Basic first, then the form's. */
export function claimedClientId(ctx: Context): string | undefined {
  const basic = /^basic +([A-Za-z0-9+/=]+)$/i.exec(ctx.get('authorization').trim());
  if (basic) {
    const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    try {
      return colon > 0 ? decodeURIComponent(decoded.slice(0, colon)) : undefined;
    } catch {
      return undefined;
    }
  }
  const fromForm = (ctx.req as typeof ctx.req & { body?: Params }).body?.client_id;
  return typeof fromForm === 'string' && fromForm ? fromForm : undefined;
}
