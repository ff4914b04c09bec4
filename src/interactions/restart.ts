import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import Router from '@koa/router';
import type Provider from 'oidc-provider';
import { AppError } from '../errors.js';
import { ROUTES } from '../provider/configuration.js';
import { pushAgain } from '../provider/pushed-requests.js';

/**
 * Links that start a pushed authorization request (RFC 9126) again: sign-up, Forgot password? and
 * the mailed links that follow them, "Not you?", and the verify-your-address page. A plain authorize
 * URL rebuilt from the flow's parameters would be refused for an application that requires pushed
 * requests, and would put in the browser's address bar the parameters its client pushed so that
 * they never pass through it. A pushed request lives a minute, and a verification mail may be
 * followed a day later, so the link cannot name one: it carries the flow's parameters sealed
 * (AES-256-GCM under a key derived from the cookie keys, which every instance shares, so the
 * browser can neither read nor change them) and the route below pushes them again when it is
 * followed, then sends the browser to authorize with only client_id and the new request_uri.
 * Nothing is stored until then.
 */
export const RESTART_PATH = '/login/oauth/restart';

/** How long a restart link works: as long as the e-mail verification link it may ride in. */
const RESTART_LINK_TTL_MS = 24 * 60 * 60 * 1000;
const PURPOSE = 'flow-restart';

function keyOf(cookieKey: string): Buffer {
  return createHmac('sha256', cookieKey).update(PURPOSE).digest();
}

/** The link that pushes `params` (a flow's parameters, as the library checked them) again when followed. */
export function restartLink(cookieKeys: readonly string[], params: Record<string, string>): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyOf(cookieKeys[0]!), iv).setAAD(Buffer.from(PURPOSE));
  const body = Buffer.concat([cipher.update(JSON.stringify({ params, exp: Date.now() + RESTART_LINK_TTL_MS })), cipher.final()]);
  const sealed = Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
  return `${RESTART_PATH}?${new URLSearchParams({ request: sealed })}`;
}

/** The parameters a restart link sealed, or undefined when it is not one of ours, was changed, or expired. */
function opened(cookieKeys: readonly string[], sealed: unknown): Record<string, string> | undefined {
  if (typeof sealed !== 'string' || sealed.length > 8192) return undefined;
  const raw = Buffer.from(sealed, 'base64url');
  if (raw.length < 29) return undefined;
  for (const key of cookieKeys) {
    try {
      const decipher = createDecipheriv('aes-256-gcm', keyOf(key), raw.subarray(0, 12)).setAAD(Buffer.from(PURPOSE));
      decipher.setAuthTag(raw.subarray(12, 28));
      const found = JSON.parse(Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8')) as { params: Record<string, string>; exp: number };
      return found.exp > Date.now() ? found.params : undefined;
    } catch {
      // Sealed under another key (an older cookie key), or not ours: try the next.
    }
  }
  return undefined;
}

/** GET RESTART_PATH?request=…: the sealed request pushed again, then authorize with its request_uri. */
export function restartRoutes(deps: { provider: Provider; cookieKeys: readonly string[] }): Router {
  const router = new Router();
  router.get(RESTART_PATH, async (ctx) => {
    const params = opened(deps.cookieKeys, ctx.query.request);
    const requestUri = params ? await pushAgain(deps.provider, params) : undefined;
    if (!params || !requestUri) {
      throw new AppError(400, 'invalid_request', 'This link to continue to the application has expired or is no longer valid. Go back to the application and start again.', 'request');
    }
    ctx.redirect(`${ROUTES.authorization}?${new URLSearchParams({ client_id: params.client_id!, request_uri: requestUri })}`);
  });
  return router;
}
