import type { UpstreamKind } from '../upstream.js';
import { cachedConfiguration, discover, urlSetting } from '../discovery.js';
import { oidcClaims, standardProfile } from '../oidc-profile.js';

/**
 * GitLab.com and self-managed GitLab: an OpenID Connect provider at its own address (its issuer is
 * the base URL, discovery at <base>/.well-known/openid-configuration). The username is its
 * `nickname` claim; GitLab says in `email_verified` whether it confirmed the address.
 */

const GITLAB_COM = 'https://gitlab.com';

export const gitlab: UpstreamKind = {
  kind: 'gitlab',
  signIn: 'redirect',
  label: 'GitLab',
  settings: [
    urlSetting('base_url', 'Base URL', 'Leave empty for gitlab.com. For a self-managed GitLab, its address, such as https://gitlab.example.com.'),
  ],
  defaultScopes: ['openid', 'email', 'profile'],
  usesIdToken: true,
  configure(provider, { timeoutMs, allowHttp }) {
    return cachedConfiguration(provider, () => discover(new URL(provider.settings.base_url || GITLAB_COM), provider, timeoutMs, undefined, { allowHttp }));
  },
  async profile(config, tokens) {
    return standardProfile(await oidcClaims(config, tokens, 'GitLab'), 'nickname');
  },
};
