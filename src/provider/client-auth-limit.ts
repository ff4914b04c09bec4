import type { Context, Next } from 'koa';
import { inWords } from '../errors.js';
import type { Limits } from '../services/limits.js';
import { parsedForm } from './forms.js';

/**
 * Failed client authentications on the routes that authenticate clients (token, revocation,
 * introspection, device authorization, PAR), counted per client_id and client address (an IPv6
 * client by its /64). A request that presents a secret takes its point before the library
 * compares it, so secrets sent at once are counted before any is compared; past the limit the
 * request is refused with a 429 and the library never sees it. A right secret gives the point
 * back, so a server's own requests in flight only make its next ones wait a moment (see
 * Limits.takeClientAuth). A client_id is public (it is in every authorization URL), so counting it alone would let
 * anyone lock its server out with a few wrong secrets; counted with the address, a stranger's
 * failures block only the stranger. A public client sends no secret: it has nothing to count.
 * Runs after the form body has been read (readFormBodies), so the refusal never leaves a body
 * unread on a kept-alive connection.
 */
export function clientAuthLimit(limits: Limits, paths: readonly string[]) {
  return async function limitClientAuthentication(ctx: Context, next: Next): Promise<void> {
    if (ctx.method !== 'POST' || !paths.includes(ctx.path)) return next();
    const clientId = clientIdWithSecret(ctx);
    if (!clientId) return next();
    const wait = await limits.takeClientAuth(clientId, ctx.ip);
    if (wait) {
      ctx.status = 429;
      ctx.set('Retry-After', String(wait));
      ctx.set('Cache-Control', 'no-store');
      ctx.body = { error: 'rate_limited', error_description: `too many failed client authentications for this client_id from your address; try again ${inWords(wait)}` };
      return;
    }
    let failed = false;
    try {
      await next();
      failed = ctx.status === 401 && (ctx.body as { error?: string } | undefined)?.error === 'invalid_client';
    } finally {
      await (failed ? limits.clientAuthFailed(clientId, ctx.ip) : limits.clientAuthSucceeded(clientId, ctx.ip));
    }
  };
}

/**
 * The client_id of a request that presents a client secret, read as the library reads it
 * (lib/shared/client_auth.js): the form's client_secret with its client_id, else HTTP Basic
 * (each part form-decoded, `+` a space), when it is one the limits count (at most 255
 * characters); undefined when no secret is presented, or the library would refuse the request
 * before comparing one.
 */
function clientIdWithSecret(ctx: Context): string | undefined {
  const form = parsedForm(ctx);
  let clientId: string | undefined;
  if (typeof form?.client_secret === 'string' && form.client_secret) {
    clientId = typeof form.client_id === 'string' ? form.client_id : undefined;
  } else {
    const basic = /^basic ([A-Za-z0-9+/]+={0,2})$/i.exec(ctx.get('authorization'));
    if (!basic) return undefined;
    const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    try {
      const [id, secret] = [decoded.slice(0, colon), decoded.slice(colon + 1)].map((part) => decodeURIComponent(part.replace(/\+/g, '%20')));
      if (colon < 0 || !secret) return undefined;
      clientId = id;
    } catch {
      return undefined;
    }
  }
  return clientId && clientId.length <= 255 ? clientId : undefined;
}
