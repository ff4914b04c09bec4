import * as querystring from 'node:querystring';
import type { Context, Next } from 'koa';
import { controlCharacterMessage, fieldWithControlCharacter } from '../control-characters.js';
import { knownScopes } from '../vocabulary.js';
/**
 * oidc-provider reads its own form bodies; this pre-step reads them first, on every POST to the
 * provider, so that each form passes the same edge check as the rest of the service (no control
 * characters, a 413 past 56 KiB that leaves the connection usable) and then hands the parsed form
 * over: the library takes an already-parsed `req.body` (lib/shared/selective_body.js).
 *
 * On the token endpoint it also accepts the query-string style (GitHub's OAuth documentation shows it): the parameters in the query string, often
 * with an empty body, merged into the form. A parameter given in both places with the same value
 * counts once; with different values it is a duplicate, which the library rejects as
 * `invalid_request`. `grant_type` defaults to `authorization_code`, and a refresh request's
 * scope keeps only the scopes this service knows (see `refreshScope`).
 */
const BODY_LIMIT = 56 * 1024;
const FORM = 'application/x-www-form-urlencoded';

type Params = Record<string, string | string[] | undefined>;

/**
 * Reads at most BODY_LIMIT bytes. Past the limit it stops reading without destroying the request:
 * the rest of the body is drained (or the connection closed) once the answer is sent, so a
 * keep-alive client's next request on the same connection still works.
 */
async function readForm(ctx: Context): Promise<Params | 'too-large'> {
  const declared = Number(ctx.get('content-length') || 0);
  if (declared > BODY_LIMIT) return 'too-large';
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req.iterator({ destroyOnReturn: false })) {
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

function invalidRequest(ctx: Context, status: number, description: string): void {
  ctx.status = status;
  ctx.set('Cache-Control', 'no-store');
  ctx.body = { error: 'invalid_request', error_description: description };
}

export function providerFormBodies(tokenPath: string) {
  return async function readFormBodies(ctx: Context, next: Next): Promise<void> {
    if (ctx.method !== 'POST') return next();
    const isToken = ctx.path === tokenPath;
    const type = ctx.get('content-type');
    // Other content types are left to the library, which answers them with invalid_request.
    if (type ? !ctx.is(FORM) : !isToken) return next();
    const body = await readForm(ctx);
    if (body === 'too-large') return invalidRequest(ctx, 413, 'the request body is too large');
    const params = isToken ? mergeParams(body, ctx.query as Params) : body;
    const field = fieldWithControlCharacter(params);
    if (field !== undefined) return invalidRequest(ctx, 400, controlCharacterMessage(field));
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

/** Adds `expire_in` (a string, which the first clients of this service read) beside RFC 6749's `expires_in`, and their lower-case `bearer`. */
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
