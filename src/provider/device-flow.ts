import type { Context, Next } from 'koa';
import type { KoaContextWithOIDC } from 'oidc-provider';
import { RetryLaterError } from '../errors.js';
import type { Limits } from '../services/limits.js';
import { digest } from '../tokens.js';
import { DEVICE_CODE_GRANT } from './clients.js';
import { parsedForm } from './forms.js';

/**
 * The device authorization grant (RFC 8628) is the library's (features.deviceFlow); two parts of
 * the RFC it leaves to the server are added here, around its routes.
 */

/**
 * The device authorization response tells the device how long to wait between polls
 * (`interval`, RFC 8628 §3.2); the library leaves it out, which means 5 seconds. An application
 * that did not enable the device flow is refused as RFC 6749 names it, `unauthorized_client`
 * (the library says `invalid_request`, "…device_code is not allowed for this client").
 */
export function deviceAuthorizationResponse(path: string, intervalS: number) {
  return async function addPollingInterval(ctx: Context, next: Next): Promise<void> {
    await next();
    if (ctx.path !== path || ctx.method !== 'POST' || !ctx.body || typeof ctx.body !== 'object') return;
    const body = ctx.body as Record<string, unknown>;
    if (ctx.status === 200 && typeof body.device_code === 'string' && body.interval === undefined) ctx.body = { ...body, interval: intervalS };
    if (ctx.status === 400 && body.error === 'invalid_request' && body.error_description === `${DEVICE_CODE_GRANT} is not allowed for this client`) {
      ctx.body = { error: 'unauthorized_client', error_description: 'this application has not enabled the device flow (Enable Device Flow in its settings)' };
    }
  };
}

/**
 * A device that polls the token endpoint with the same device code sooner than the interval is
 * answered `slow_down` (RFC 8628 §3.5), and the library never sees that poll; every other poll
 * goes on to the library, which answers `authorization_pending`, `expired_token`,
 * `access_denied` or the tokens. Runs after the form is read and merged with the query
 * (tokenParametersInQuery), so it sees the grant type and code the library will.
 */
export function devicePollInterval(limits: Limits, tokenPath: string) {
  return async function slowDownFastPolls(ctx: Context, next: Next): Promise<void> {
    const form = ctx.method === 'POST' && ctx.path === tokenPath ? parsedForm(ctx) : undefined;
    const code = form?.grant_type === DEVICE_CODE_GRANT ? form.device_code : undefined;
    if (typeof code === 'string' && code && code.length <= 1024 && !(await limits.devicePollAllowed(digest(code)))) {
      ctx.status = 400;
      ctx.set('Cache-Control', 'no-store');
      ctx.body = { error: 'slow_down', error_description: 'you are polling too quickly: wait the interval (5 seconds more after each slow_down) between requests' };
      return;
    }
    await next();
  };
}

/**
 * RFC 8628 §5.1: a user code of 8 characters is safe only while guessing it is limited. Every
 * code entered at the verification page (`POST /login/device`, with or without its confirmation)
 * takes a point from the browser and from its address (an IPv6 client by its /64) before the
 * library looks it up; past either limit the site's 429 page answers, with Retry-After, and the
 * library never sees the code. "The browser" is the library's session cookie, which the page's
 * form needs (its one-time `xsrf` lives in that session): a client that drops its cookies is
 * still counted by its address. A device connected gives one point back (see
 * Limits.takeDeviceCodeEntry). Runs after the form is read (readFormBodies).
 */
export function deviceCodeEntryLimit(limits: Limits, options: { path: string; sessionCookie: string; refuse: (ctx: Context, err: RetryLaterError) => void }) {
  return async function limitUserCodes(ctx: Context, next: Next): Promise<void> {
    const form = ctx.method === 'POST' && ctx.path === options.path ? parsedForm(ctx) : undefined;
    if (!form?.user_code) return next();
    const browser = ctx.cookies.get(options.sessionCookie) || undefined;
    try {
      await limits.takeDeviceCodeEntry(browser, ctx.ip);
    } catch (err) {
      if (!(err instanceof RetryLaterError)) throw err;
      ctx.set('Retry-After', String(err.retryAfterS));
      options.refuse(ctx, err);
      return;
    }
    await next();
    const code = (ctx as Partial<KoaContextWithOIDC>).oidc?.entities.DeviceCode as { inFlight?: boolean } | undefined;
    if (form.confirm && code?.inFlight) await limits.deviceConnected(browser, ctx.ip);
  };
}
