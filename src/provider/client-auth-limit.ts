import type { Context, Next } from 'koa';
import { inWords } from '../errors.js';
import type { Limits } from '../services/limits.js';
import { parsedForm } from './forms.js';

/**
 * Failed client authentications are counted per client_id on the routes that authenticate
 * clients (token, revocation, introspection, device authorization, PAR); past the limit the client is refused with a 429
 * before its secret is even compared, until the window ends. Runs after the form body has been
 * read (readFormBodies), so the refusal never leaves a body unread on a kept-alive connection.
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

/** The client_id a client-authenticating request names: HTTP Basic first, then the form's. */
function claimedClientId(ctx: Context): string | undefined {
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
  const fromForm = parsedForm(ctx)?.client_id;
  return typeof fromForm === 'string' && fromForm ? fromForm : undefined;
}
