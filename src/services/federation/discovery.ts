import { createHash } from 'node:crypto';
import * as client from 'openid-client';
import type { KindSetting, UpstreamProvider } from './upstream.js';

/**
 * What the preset kinds share: reading an upstream's discovery document within the sign-in
 * timeout, the rule for plain-http upstreams, a configuration cache per provider version, and the
 * checks of the base URL settings.
 */

/** The names that reach this machine only; an upstream there may be plain http outside production. */
const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/** Raised when an upstream answers in a way its kind does not expect; its message says what went wrong, for the log and the failure page. */
export class UpstreamAnswerError extends Error {
  override name = 'UpstreamAnswerError';
  /** `domain`: the person is outside the domain the provider is limited to (a Google Workspace domain), said as a domain not allowed. */
  constructor(message: string, readonly reason?: 'domain') {
    super(message);
  }
}

/**
 * Whether `url` may be fetched over plain http: only on a loopback name (an upstream started on the
 * same machine, in development and tests), and never in production. The sign-in flow says which
 * (`allowHttp`, false when NODE_ENV=production); called without it, this reads the variable
 * config.ts checks.
 */
export function insecureAllowed(url: URL, allowHttp = process.env.NODE_ENV !== 'production'): boolean {
  return url.protocol === 'http:' && LOOPBACK.has(url.hostname) && allowHttp;
}

/** A fetch that gives up after `timeoutMs` (as well as when openid-client's own signal fires). */
export function timedFetch(timeoutMs: number): client.CustomFetch {
  return (url, options) => {
    const signals = [AbortSignal.timeout(timeoutMs)];
    if (options.signal) signals.push(options.signal);
    return fetch(url, { ...options, signal: AbortSignal.any(signals) } as RequestInit);
  };
}

/** Applies the timeout and the plain-http rule to a configuration built from fixed endpoints. */
export function prepare(config: client.Configuration, base: URL, timeoutMs: number, fetcher = timedFetch(timeoutMs), allowHttp?: boolean): client.Configuration {
  config[client.customFetch] = fetcher;
  config.timeout = Math.max(1, Math.ceil(timeoutMs / 1000));
  if (insecureAllowed(base, allowHttp)) client.allowInsecureRequests(config);
  return config;
}

/** The upstream's client authentication at its token endpoint: client_secret_basic (the default when the document names none) unless it offers only client_secret_post. */
function clientAuthOf(server: Pick<client.ServerMetadata, 'token_endpoint_auth_methods_supported'>, secret: string): client.ClientAuth {
  const methods = server.token_endpoint_auth_methods_supported;
  if (!methods || methods.includes('client_secret_basic') || !methods.includes('client_secret_post')) return client.ClientSecretBasic(secret);
  return client.ClientSecretPost(secret);
}

/**
 * Discovers `issuer` (its `/.well-known/openid-configuration`) within the timeout, for `provider`'s
 * client, authenticating at the token endpoint as the document offers. Every later request to the
 * upstream (token, userinfo, keys) goes through `fetcher` with the same timeout.
 */
export async function discover(
  issuer: URL,
  provider: Pick<UpstreamProvider, 'clientId' | 'clientSecret'>,
  timeoutMs: number,
  fetcher = timedFetch(timeoutMs),
  { allowHttp, insecure = insecureAllowed(issuer, allowHttp) }: { allowHttp?: boolean; insecure?: boolean } = {},
): Promise<client.Configuration> {
  // Chosen when the token endpoint is called, from the document discovery read: the configuration
  // stays the one discovery made (it carries what openid-client knows of the issuer, such as
  // Entra ID's {tenantid} template).
  const auth: client.ClientAuth = (server, ...rest) => clientAuthOf(server, provider.clientSecret)(server, ...rest);
  const config = await client.discovery(issuer, provider.clientId, { client_secret: provider.clientSecret }, auth, {
    [client.customFetch]: fetcher,
    timeout: Math.max(1, Math.ceil(timeoutMs / 1000)),
    ...(insecure ? { execute: [client.allowInsecureRequests] } : {}),
  });
  config[client.customFetch] = fetcher;
  config.timeout = Math.max(1, Math.ceil(timeoutMs / 1000));
  return config;
}

const cache = new Map<number, { version: string; config: Promise<client.Configuration> }>();

/**
 * A provider's configuration, built once per version of its row (a change by an administrator
 * bumps updated_at, and changes the client or settings, and so rebuilds it). A failed build is not kept, so the next sign-in tries again.
 */
export function cachedConfiguration(provider: UpstreamProvider, build: () => Promise<client.Configuration>): Promise<client.Configuration> {
  const updated = provider.row.updated_at instanceof Date ? provider.row.updated_at.toISOString() : String(provider.row.updated_at);
  // The secret only as a digest: this key is compared, never shown, but a digest keeps it out of any heap dump of the map.
  const secret = createHash('sha256').update(provider.clientSecret).digest('base64url');
  const version = JSON.stringify([updated, provider.clientId, provider.settings, secret]);
  const hit = cache.get(provider.id);
  if (hit && hit.version === version) return hit.config;
  const config = build();
  cache.set(provider.id, { version, config });
  config.catch(() => {
    if (cache.get(provider.id)?.config === config) cache.delete(provider.id);
  });
  return config;
}

/** Forgets every cached configuration (tests, and a provider removed). */
export function forgetConfigurations(): void {
  cache.clear();
}

/**
 * Checks a base URL setting: an absolute https URL (http only on a loopback name), without query,
 * fragment or credentials; returned without a trailing slash. '' stays '' (the kind's default).
 */
export function parseBaseUrl(value: string, what = 'the base URL'): string {
  const trimmed = value.trim();
  if (!trimmed) return '';
  let url: URL;
  try {
    url = new URL(trimmed);
  } catch {
    throw new Error(`${what} must be an absolute URL, such as https://example.com`);
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && LOOPBACK.has(url.hostname))) {
    throw new Error(`${what} must use https (http only for localhost, 127.0.0.1 or [::1])`);
  }
  if (url.username || url.password) throw new Error(`${what} must not contain a user name or password`);
  if (url.search || url.hash || trimmed.includes('?') || trimmed.includes('#')) throw new Error(`${what} must not contain a query (?…) or fragment (#…)`);
  return url.href.replace(/\/+$/, '');
}

/** An optional URL setting of a kind (empty: the kind's default), checked by `parseBaseUrl`; its errors name it by its label. */
export function urlSetting(name: string, label: string, hint: string): KindSetting {
  const what = `the ${label.replace(/^[A-Z][a-z]/, (first) => first.toLowerCase())}`;
  return { name, label, hint, required: false, parse: (value) => parseBaseUrl(value, what) };
}

/** A claim as a string, or '' when absent or not a string. */
export function stringClaim(claims: Record<string, unknown> | undefined, name: string): string {
  const value = claims?.[name];
  return typeof value === 'string' ? value : '';
}

/** A claim that is true, or the string "true" (some upstreams send booleans as strings). */
export function trueClaim(claims: Record<string, unknown> | undefined, name: string): boolean {
  const value = claims?.[name];
  return value === true || value === 'true';
}

/** The `amr` claim as a list of strings. */
export function amrClaim(claims: Record<string, unknown> | undefined): string[] {
  const value = claims?.amr;
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}
