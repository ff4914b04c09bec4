import type { Knex } from 'knex';
import type { Context, Next } from 'koa';
import type Provider from 'oidc-provider';
import type { ADMIN_SCOPE, Scope } from '../vocabulary.js';
import { digest, isWellFormedToken } from '../tokens.js';
import { AppError, tooManyRequests } from '../errors.js';
import { bearerTokens, type TokenOwner } from '../services/bearer-tokens.js';
import type { DpopReplay } from '../services/dpop-replay.js';
import type { ApiVerdict, Limits } from '../services/limits.js';
import { DPOP_SIGNING_ALGS } from '../provider/configuration.js';
import { DPOP_IAT_WINDOW_S, DpopProofError, verifyDpopProof } from './dpop.js';
import { BearerError } from './errors.js';
import { apiResourceMetadataUrl } from './protected-resource.js';

/** Who the request's token acts as. */
export type ApiAuth = TokenOwner;

/** How the token was presented: `Authorization: Bearer …` (RFC 6750) or `Authorization: DPoP …` (RFC 9449). */
type Scheme = 'Bearer' | 'DPoP';

/** A challenge's parameter value: a description never carries a quote or backslash into the header. */
const quoted = (value: string) => `"${value.replace(/["\\]/g, "'")}"`;

/**
 * The WWW-Authenticate challenge of `scheme`. The realm is the issuer; every challenge names the
 * API's protected resource metadata (RFC 9728 §5.1), where a client learns which authorization
 * server to get a token from; a DPoP one also names the algorithms a proof may use.
 */
function challenge(scheme: Scheme, realm: string, params: Record<string, string> = {}): string {
  const all = { resource_metadata: apiResourceMetadataUrl(realm), ...params, ...(scheme === 'DPoP' ? { algs: DPOP_SIGNING_ALGS.join(' ') } : {}) };
  return [`${scheme} realm=${quoted(realm)}`, ...Object.entries(all).map(([k, v]) => `${k}=${quoted(v)}`)].join(', ');
}

/**
 * One middleware for both token kinds (`ho_` OAuth, `ha_` personal; see
 * `services/bearer-tokens.ts`). A value whose checksum does not match is refused before any lookup.
 *
 * An `ho_` token the client bound to a DPoP key at the token endpoint (RFC 9449) is accepted only
 * as `Authorization: DPoP <token>` with a `DPoP` proof signed by that key for this request (see
 * `verifyDpopProof`), each proof once across every instance (`replay`); sent as Bearer it is
 * refused with a DPoP challenge. The DPoP scheme is refused for a token that is not bound (a
 * personal token never is), though RFC 9449 §7.1 would allow accepting it: a client that means
 * to use DPoP learns at once that its token is not protected by it.
 */
export function bearerAuth(deps: { db: Knex; provider: Provider; limits: Limits; realm: string; issuer: string; replay: DpopReplay }) {
  const invalid = (scheme: Scheme, description: string) =>
    new BearerError(401, 'invalid_token', description, challenge(scheme, deps.realm, { error: 'invalid_token', error_description: description }));
  const invalidProof = (description: string) =>
    new BearerError(401, 'invalid_dpop_proof', description, challenge('DPoP', deps.realm, { error: 'invalid_dpop_proof', error_description: description }));
  const tokens = bearerTokens(deps);

  return async function authenticate(ctx: Context, next: Next): Promise<void> {
    const header = ctx.get('authorization');
    const match = /^(bearer|dpop)(?: +(.*))?$/i.exec(header.trim());
    if (!header || !match) {
      throw new BearerError(401, 'unauthorized', 'send a token as "Authorization: Bearer <token>"', challenge('Bearer', deps.realm));
    }
    const scheme: Scheme = match[1]!.toLowerCase() === 'dpop' ? 'DPoP' : 'Bearer';
    const value = (match[2] ?? '').trim();
    if (!value) throw invalid(scheme, `the ${scheme === 'DPoP' ? 'DPoP-bound' : 'bearer'} token is empty`);
    if (!isWellFormedToken(value) || !(value.startsWith('ho_') || value.startsWith('ha_'))) {
      throw invalid(scheme, 'the token is malformed');
    }
    if (scheme === 'DPoP' && value.startsWith('ha_')) {
      throw invalid('Bearer', 'a personal access token is not bound to a DPoP key: send it as Authorization: Bearer');
    }
    const tokenDigest = digest(value);
    const auth = value.startsWith('ho_') ? await tokens.oauth(value) : await tokens.personal(tokenDigest);
    if (!auth) throw invalid(scheme, 'the token is unknown, expired or revoked');
    if (scheme === 'Bearer' && auth.jkt) {
      throw invalid('DPoP', 'the token is bound to a DPoP key: send it as Authorization: DPoP with a DPoP proof');
    }
    if (scheme === 'DPoP') {
      if (!auth.jkt) throw invalid('Bearer', 'the token is not bound to a DPoP key: send it as Authorization: Bearer');
      await checkProof(ctx, value, auth.jkt);
    }
    // Both at once, one round trip of latency: the request is counted, and an OAuth token's
    // application and user must still be there (one query).
    const [verdict, partiesActive] = await Promise.all([deps.limits.apiRequest(tokenDigest), tokens.oauthPartiesActive(auth)]);
    if (!partiesActive) throw invalid(scheme, 'the token is unknown, expired or revoked');
    if (verdict) applyAllowance(ctx, verdict);
    ctx.state.auth = auth;
    ctx.state.authScheme = scheme;
    await next();
  };

  /**
   * The request's proof, for the URL built from the issuer (as the client sees it, whatever the
   * proxy in front says), signed by the token's key, and not seen before on any instance.
   */
  async function checkProof(ctx: Context, accessToken: string, jkt: string): Promise<void> {
    let proof;
    try {
      proof = await verifyDpopProof(ctx.get('dpop'), { method: ctx.method, url: `${deps.issuer}${ctx.path}`, accessToken });
    } catch (err) {
      if (err instanceof DpopProofError) throw invalidProof(err.message);
      throw err;
    }
    if (proof.jkt !== jkt) throw invalidProof('the DPoP proof is not signed by the key the token is bound to');
    // Remembered until its iat leaves the window, when it would be refused anyway.
    const ttlS = proof.iat + DPOP_IAT_WINDOW_S - Date.now() / 1000;
    if (!(await deps.replay.claim(jkt, proof.jti, ttlS))) throw invalidProof('the DPoP proof was already used');
  }
}

/**
 * Says where a token stands against its hourly allowance in GitHub's headers, on every answer
 * to it; past the allowance, 429 until the window resets.
 */
function applyAllowance(ctx: Context, verdict: ApiVerdict): void {
  const { allowance } = verdict;
  // Before the handler runs, so nothing is sent yet: straight onto the response, as on every call.
  const { res } = ctx;
  res.setHeader('X-RateLimit-Limit', String(allowance.limit));
  res.setHeader('X-RateLimit-Remaining', String(allowance.remaining));
  res.setHeader('X-RateLimit-Used', String(allowance.used));
  res.setHeader('X-RateLimit-Reset', String(allowance.resetAt));
  if (!verdict.allowed) {
    throw tooManyRequests('Too many requests', { points: allowance.limit, durationS: allowance.windowS }, verdict.retryAfterS);
  }
}

/** Declares the scope a route needs; `groups:read-write` includes `groups:read-only`. */
export function requireScope(scope: Scope | typeof ADMIN_SCOPE | 'any', realm: string) {
  return async function checkScope(ctx: Context, next: Next): Promise<void> {
    const { scopes } = ctx.state.auth as ApiAuth;
    const ok = scope === 'any' || scopes.has(scope) || (scope === 'groups:read-only' && scopes.has('groups:read-write'));
    if (!ok) {
      const scheme = (ctx.state.authScheme as Scheme | undefined) ?? 'Bearer';
      throw new BearerError(403, 'insufficient_scope', `this request needs the ${scope} scope`, challenge(scheme, realm, { error: 'insufficient_scope', scope }));
    }
    await next();
  };
}

/**
 * Managing OAuth applications (creating, editing or deleting one, its secrets, its sign-out URLs,
 * revoking all its users' tokens) is a person's own act: it takes a personal access token (`ha_`).
 * An OAuth access token (`ho_`) was handed to a third-party application, whatever its scope; with
 * it, that application could point another application of its user's groups at a callback of its
 * own and mint a secret for it, and every person who had authorized that one would then be sent
 * there with a code. Managing webhooks is the same: with it, that application could point a
 * webhook at a server of its own and be told of every change of the group from then on. Checked
 * before the group or application is looked up, so it tells nothing. `what` names the act in the
 * refusal.
 */
export function requirePersonalTokenFor(what: string) {
  return async function requirePersonalToken(ctx: Context, next: Next): Promise<void> {
    if (authOf(ctx).kind !== 'personal') {
      throw new AppError(
        403,
        'personal_token_required',
        `${what} needs a personal access token (ha_) of an owner of the group; an OAuth access token (ho_) given to an application cannot, whatever its scope`,
      );
    }
    await next();
  };
}

export const requirePersonalToken = requirePersonalTokenFor('creating, changing or deleting OAuth applications and their secrets');

export function authOf(ctx: Context): ApiAuth {
  return ctx.state.auth as ApiAuth;
}
