import type Provider from 'oidc-provider';
import type { Metrics } from '../metrics.js';

/**
 * OpenID Connect Back-Channel Logout 1.0. An application with a back-channel logout URL
 * (clients.ts) is sent a signed logout token when a session it signed a person in through ends.
 * The provider's own logout (end_session) sends them itself; the service's own ways of ending
 * sessions (signing out on the site, Sessions, an administrator disabling the account, a password
 * reset, account deletion) call `sendLogoutTokens` with the session they ended. Either way the
 * token is the library's (`Client#backchannelLogout`: an RS256 JWT of `typ` logout+jwt with `iss`,
 * `aud`, `iat`, `exp`, `jti`, `sub`, `sid` and the back-channel logout event, signed with the
 * provider's current key) and so is its delivery (a POST with a 2.5 s timeout, redirects not
 * followed). Every delivery ends in the provider's `backchannel.success` or `backchannel.error`
 * event, which `watchBackchannelLogout` logs and counts.
 */

interface Log {
  warn(fields: Record<string, unknown>, message: string): void;
}

/**
 * Logs and counts every back-channel logout delivery, the provider's own (end_session) and the
 * service's alike: `idp_backchannel_logouts_total{result="delivered"|"failed"}`. A failure is a
 * warning naming the application (never the token).
 */
export function watchBackchannelLogout(provider: Pick<Provider, 'on'>, metrics: Metrics, log: Log): void {
  provider.on('backchannel.success', () => metrics.backchannelLogout('delivered'));
  provider.on('backchannel.error', (_ctx: unknown, err: unknown, client: { clientId?: string } | undefined) => {
    metrics.backchannelLogout('failed');
    const reason = err instanceof Error ? (err.name === 'TimeoutError' ? 'timed out' : err.message) : String(err);
    log.warn({ clientId: client?.clientId, reason }, 'back-channel logout not delivered');
  });
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * The library's outgoing requests (the logout tokens' POSTs) go through its SSRF guard, which
 * refuses loopback and private addresses. Outside production a back-channel logout URL on the
 * loopback names (allowed as for callbacks, for development) is reached without the guard;
 * everything else, and everything in production, keeps it.
 */
export function outgoingFetch(production: boolean): (url: URL | string, options: RequestInit & { dispatcher?: unknown }) => Promise<Response> {
  return (url, options) => {
    const host = new URL(url).hostname.toLowerCase();
    if (!production && LOOPBACK_HOSTS.has(host)) {
      const { dispatcher: _guard, ...rest } = options;
      return fetch(url, rest);
    }
    return fetch(url, options as RequestInit);
  };
}
