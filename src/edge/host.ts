import type { Context, Next } from 'koa';

/**
 * The service answers only for the host of ISSUER: a request naming any other Host gets 421
 * Misdirected Request with no content, so nothing it writes (discovery, redirects, pages) can be
 * cached under, or built for, a name an attacker chose. The health endpoints answer whatever the
 * Host, for load balancers. For a loopback ISSUER, `localhost`, `127.0.0.1` and `[::1]` on its
 * port are the same host.
 */
const EXEMPT_PATHS = new Set(['/healthz', '/readyz']);
const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '[::1]'];
const DEFAULT_PORTS: Record<string, string> = { 'http:': '80', 'https:': '443' };

/** `Host` values (lower-case, default port dropped) that name the issuer. */
export function allowedHosts(issuer: string): Set<string> {
  const url = new URL(issuer);
  const port = url.port && url.port !== DEFAULT_PORTS[url.protocol] ? `:${url.port}` : '';
  const names = LOOPBACK_NAMES.includes(url.hostname) ? LOOPBACK_NAMES : [url.hostname];
  return new Set(names.map((name) => `${name}${port}`.toLowerCase()));
}

function normalize(host: string, protocol: string): string {
  const lower = host.trim().toLowerCase();
  const defaultPort = DEFAULT_PORTS[protocol];
  return defaultPort && lower.endsWith(`:${defaultPort}`) ? lower.slice(0, -defaultPort.length - 1) : lower;
}

export function issuerHostOnly(issuer: string) {
  const allowed = allowedHosts(issuer);
  const { protocol } = new URL(issuer);
  return async function checkHost(ctx: Context, next: Next): Promise<void> {
    // Koa's ctx.host: the Host header, or X-Forwarded-Host from a trusted proxy (TRUST_PROXY).
    if (EXEMPT_PATHS.has(ctx.path) || allowed.has(normalize(ctx.host, protocol))) return next();
    ctx.status = 421;
    ctx.body = '';
    ctx.remove('Content-Type');
  };
}
