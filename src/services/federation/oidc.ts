import { cachedConfiguration, discover, parseBaseUrl } from './discovery.js';
import { oidcClaims, standardProfile } from './oidc-profile.js';
import type { KindSetting, UpstreamKind } from './upstream.js';

/**
 * The generic OpenID Connect kind: any provider with a discovery document at
 * `<issuer>/.well-known/openid-configuration` (Keycloak, authentik, Okta, Auth0, Dex, another
 * Horizon ID). GitLab, Google and Microsoft are this kind with a fixed or derived issuer.
 */

/** An issuer as an administrator types it: an https URL (http only on a loopback name), without query, fragment or credentials, nor a trailing slash. */
export function parseIssuer(value: string): string {
  const issuer = parseBaseUrl(value, 'the issuer');
  if (!issuer) throw new Error('the issuer must be a URL, such as https://accounts.example.com');
  return issuer;
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
  signIn: 'redirect',
  label: 'OpenID Connect',
  settings: [issuerSetting],
  defaultScopes: ['openid', 'email', 'profile'],
  usesIdToken: true,
  configure(provider, { timeoutMs, allowHttp }) {
    return cachedConfiguration(provider, () => discover(new URL(provider.settings.issuer ?? ''), provider, timeoutMs, undefined, { allowHttp }));
  },
  async profile(config, tokens) {
    const claims = await oidcClaims(config, tokens, 'The provider');
    const profile = standardProfile(claims, 'preferred_username');
    if (!claims.preferred_username && typeof claims.nickname === 'string') profile.username = claims.nickname;
    return profile;
  },
};
