import type { Context, Next } from 'koa';
import { inWords } from '../errors.js';
import type { Limits } from '../services/limits.js';
import { claimedClientId } from './token-endpoint.js';

/**
 * Failed client authentications are counted per client_id on the routes that authenticate
 * clients (token, revocation, introspection); past the limit the client is refused with a 429
 * before its secret is even compared, until the window ends. Runs after the form body has been
 * read (tokenRequestParams), so the refusal never leaves a body unread on a kept-alive connection.
 */
export function clientAuthLimit(limits: Limits, paths: readonly string[]) {
  return async function limitClientAuthentication(ctx: Context, next: Next): Promise<void> {
    if (ctx.method !== 'POST' || !paths.includes(ctx.path)) return next();
    const clientId = claimedClientId(ctx);
    if (clientId && clientId.length <= 255) {
      const wait = await limits.clientAuthBlockedFor(clientId);
      if (wait) {
        ctx.status = 429;
        ctx.set('Retry-After', String(wait));
        ctx.set('Cache-Control', 'no-store');
        ctx.body = { error: 'rate_limited', error_description: `too many failed client authentications for this client_id; try again ${inWords(wait)}` };
        return;
      }
    }
    await next();
    const failed = ctx.status === 401 && (ctx.body as { error?: string } | undefined)?.error === 'invalid_client';
    if (failed && clientId && clientId.length <= 255) await limits.clientAuthFailed(clientId);
  };
}
