import type { Knex } from 'knex';
import type { Context, Next } from 'koa';
import type Provider from 'oidc-provider';
import type { Scope } from '../vocabulary.js';
import { digest, isWellFormedToken } from '../tokens.js';
import { inWords, RetryLaterError } from '../errors.js';
import { bearerTokens, type TokenOwner } from '../services/bearer-tokens.js';
import type { ApiVerdict, Limits } from '../services/limits.js';
import { BearerError } from './errors.js';

/** Who the request's token acts as. */
export type ApiAuth = TokenOwner;

/**
 * One middleware for both token kinds (`ho_` OAuth, `ha_` personal; see
 * `services/bearer-tokens.ts`). A value whose checksum does not match is refused before any lookup.
 */
export function bearerAuth(deps: { db: Knex; provider: Provider; limits: Limits; realm: string }) {
  const realm = `Bearer realm="${deps.realm}"`;
  const invalid = (description: string) =>
    new BearerError(401, 'invalid_token', description, `${realm}, error="invalid_token", error_description="${description}"`);
  const tokens = bearerTokens(deps);

  return async function authenticate(ctx: Context, next: Next): Promise<void> {
    const header = ctx.get('authorization');
    const match = /^bearer(?: +(.*))?$/i.exec(header.trim());
    if (!header || !match) {
      throw new BearerError(401, 'unauthorized', 'send a token as "Authorization: Bearer <token>"', realm);
    }
    const value = (match[1] ?? '').trim();
    if (!value) throw invalid('the bearer token is empty');
    if (!isWellFormedToken(value) || !(value.startsWith('ho_') || value.startsWith('ha_'))) {
      throw invalid('the token is malformed');
    }
    const tokenDigest = digest(value);
    const auth = value.startsWith('ho_') ? await tokens.oauth(value) : await tokens.personal(tokenDigest);
    if (!auth) throw invalid('the token is unknown, expired or revoked');
    // Both at once, one round trip of latency: the request is counted, and an OAuth token's
    // application and user must still be there (one query).
    const [verdict, partiesActive] = await Promise.all([deps.limits.apiRequest(tokenDigest), tokens.oauthPartiesActive(auth)]);
    if (!partiesActive) throw invalid('the token is unknown, expired or revoked');
    if (verdict) applyAllowance(ctx, verdict);
    ctx.state.auth = auth;
    await next();
  };
}

/**
 * Says where a token stands against its hourly allowance in GitHub's headers, on every answer
 * to it; past the allowance, 429 until the window resets.
 */
function applyAllowance(ctx: Context, verdict: ApiVerdict): void {
  const { allowance } = verdict;
  ctx.set('X-RateLimit-Limit', String(allowance.limit));
  ctx.set('X-RateLimit-Remaining', String(allowance.remaining));
  ctx.set('X-RateLimit-Used', String(allowance.used));
  ctx.set('X-RateLimit-Reset', String(allowance.resetAt));
  if (!verdict.allowed) {
    throw new RetryLaterError(429, 'rate_limited', `this token has made ${allowance.limit} requests this hour, its limit; try again ${inWords(verdict.retryAfterS)}`, verdict.retryAfterS);
  }
}

/** Declares the scope a route needs; `groups:read-write` includes `groups:read-only`. */
export function requireScope(scope: Scope | 'any', realm: string) {
  return async function checkScope(ctx: Context, next: Next): Promise<void> {
    const { scopes } = ctx.state.auth as ApiAuth;
    const ok = scope === 'any' || scopes.has(scope) || (scope === 'groups:read-only' && scopes.has('groups:read-write'));
    if (!ok) {
      throw new BearerError(
        403,
        'insufficient_scope',
        `this request needs the ${scope} scope`,
        `Bearer realm="${realm}", error="insufficient_scope", scope="${scope}"`,
      );
    }
    await next();
  };
}

export function authOf(ctx: Context): ApiAuth {
  return ctx.state.auth as ApiAuth;
}
