import * as client from 'openid-client';
import type { KindSetting, UpstreamKind, UpstreamProfile, UpstreamProvider } from './upstream.js';

/**
 * The generic OpenID Connect kind: any provider with a discovery document at
 * `<issuer>/.well-known/openid-configuration`. Google, GitLab and Microsoft are this kind with a
 * fixed or derived issuer, and reuse `discover` and `profileFromIdToken`.
 */

/** Loopback hosts, where plain http never leaves the machine. */
function isLoopback(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '');
  return host === 'localhost' || host === '::1' || /^127(\.\d{1,3}){3}$/.test(host);
}

/**
 * An issuer as an administrator types it: an absolute https URL (http only for a loopback host,
 * or any host outside production, which `discover` checks again when it is used), without a
 * query or fragment, and without a trailing slash.
 */
export function parseIssuer(value: string): string {
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    throw new Error('the issuer must be a URL such as https://accounts.example.com');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error('the issuer must be an https URL');
  if (url.search || url.hash || url.username || url.password) throw new Error('the issuer must not have a query, a fragment or credentials');
  return url.href.replace(/\/+$/, '');
}

/** Options of a request to an upstream: `allowHttp` is true outside production. */
export interface DiscoverOptions {
  timeoutMs: number;
  allowHttp?: boolean;
}

/** The upstream's client authentication at its token endpoint: client_secret_basic when it offers only that, else client_secret_post. */
function clientAuthOf(server: client.ServerMetadata, secret: string): client.ClientAuth {
  const methods = server.token_endpoint_auth_methods_supported;
  // The specification's default when the document names none is client_secret_basic.
  if (!methods) return client.ClientSecretBasic(secret);
  if (methods.includes('client_secret_basic')) return client.ClientSecretBasic(secret);
  return client.ClientSecretPost(secret);
}

/**
 * The openid-client configuration of a provider from its issuer's discovery document, with every
 * later request to the upstream (token, userinfo, keys) bounded by `timeoutMs`. Plain http is
 * allowed only for a loopback issuer, or when `allowHttp`.
 */
export async function discover(issuer: string, provider: Pick<UpstreamProvider, 'clientId' | 'clientSecret'>, options: DiscoverOptions): Promise<client.Configuration> {
  const url = new URL(issuer);
  const insecure = url.protocol === 'http:';
  if (insecure && !isLoopback(url.hostname) && !options.allowHttp) throw new Error('only an https issuer may be used in production');
  const timeout = Math.max(1, Math.ceil(options.timeoutMs / 1000));
  const found = await client.discovery(url, provider.clientId, undefined, undefined, {
    timeout,
    ...(insecure ? { execute: [client.allowInsecureRequests] } : {}),
  });
  const server = found.serverMetadata();
  const config = new client.Configuration(server, provider.clientId, { client_secret: provider.clientSecret }, clientAuthOf(server, provider.clientSecret));
  config.timeout = timeout;
  if (insecure) client.allowInsecureRequests(config);
  return config;
}

const text = (value: unknown) => (typeof value === 'string' ? value : '');

/**
 * The person of a token response: the validated ID token's claims, and the userinfo endpoint's
 * answer (for the same subject) when the ID token lacks the address or the names.
 */
export async function profileFromIdToken(config: client.Configuration, tokens: client.TokenEndpointResponse & client.TokenEndpointResponseHelpers): Promise<UpstreamProfile> {
  const claims = tokens.claims();
  if (!claims) throw new client.ClientError('the upstream sent no ID token');
  let merged: Record<string, unknown> = { ...claims };
  const lacking = !claims.email || !(claims.name || claims.preferred_username);
  if (lacking && config.serverMetadata().userinfo_endpoint) {
    const info = await client.fetchUserInfo(config, tokens.access_token, claims.sub);
    merged = { ...info, ...Object.fromEntries(Object.entries(claims).filter(([, v]) => v !== undefined && v !== '')) };
  }
  const email = text(merged.email).trim().toLowerCase();
  return {
    subject: claims.sub,
    username: text(merged.preferred_username) || text(merged.nickname) || (email ? email.split('@')[0]! : ''),
    name: text(merged.name),
    email,
    emailVerified: Boolean(email) && (merged.email_verified === true || merged.email_verified === 'true'),
    amr: Array.isArray(claims.amr) ? claims.amr.filter((m): m is string => typeof m === 'string') : [],
  };
}

const issuerSetting: KindSetting = {
  name: 'issuer',
  label: 'Issuer URL',
  hint: 'The provider\'s issuer, e.g. https://accounts.example.com: its discovery document is at <issuer>/.well-known/openid-configuration.',
  required: true,
  parse: parseIssuer,
};

export const openIdConnect: UpstreamKind = {
  kind: 'oidc',
  label: 'OpenID Connect',
  settings: [issuerSetting],
  defaultScopes: ['openid', 'email', 'profile'],
  usesIdToken: true,
  configure(provider, options) {
    return discover(provider.settings.issuer ?? '', provider, options);
  },
  profile(config, tokens) {
    return profileFromIdToken(config, tokens);
  },
};
