import type * as client from 'openid-client';
import type { UpstreamKind } from '../upstream.js';
import { UpstreamAnswerError, cachedConfiguration, discover, urlSetting, stringClaim } from '../discovery.js';
import { oidcClaims, standardProfile } from '../oidc-profile.js';

/**
 * Google accounts (Gmail and Google Workspace): OpenID Connect at https://accounts.google.com.
 * Google has no usernames, so the address's local part is suggested. With a hosted domain set, the
 * account chooser is narrowed to it (`hd` in the request, a hint only) and the ID token's `hd`
 * claim, which Google sets for Workspace accounts only, must name that domain.
 */

const GOOGLE = 'https://accounts.google.com';
const DOMAIN = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/;

/** The hosted domain each configuration was built for. */
const hostedDomain = new WeakMap<client.Configuration, string>();

export const google: UpstreamKind = {
  kind: 'google',
  signIn: 'redirect',
  label: 'Google',
  settings: [
    {
      name: 'hd',
      label: 'Google Workspace domain',
      hint: 'Optional. Only accounts of this Workspace domain (such as example.com) can sign in.',
      required: false,
      parse(value) {
        const domain = value.trim().toLowerCase();
        if (domain && !DOMAIN.test(domain)) throw new Error('the Workspace domain must be a domain name, such as example.com');
        return domain;
      },
    },
    urlSetting('base_url', 'Issuer URL', 'Leave empty (https://accounts.google.com). Set only to use a stand-in for Google, as the tests do.'),
  ],
  defaultScopes: ['openid', 'email', 'profile'],
  usesIdToken: true,
  authorizationParameters(provider): Record<string, string> {
    return provider.settings.hd ? { hd: provider.settings.hd } : {};
  },
  async configure(provider, { timeoutMs, allowHttp }) {
    const config = await cachedConfiguration(provider, () => discover(new URL(provider.settings.base_url || GOOGLE), provider, timeoutMs, undefined, { allowHttp }));
    hostedDomain.set(config, provider.settings.hd ?? '');
    return config;
  },
  async profile(config, tokens) {
    const claims = await oidcClaims(config, tokens, 'Google');
    const hd = hostedDomain.get(config);
    // `hd` in the request only narrows the chooser; someone can still come back with another account.
    if (hd && stringClaim(claims, 'hd').toLowerCase() !== hd) {
      throw new UpstreamAnswerError(`the Google account is not one of the ${hd} Workspace domain`, 'domain');
    }
    return standardProfile(claims, 'preferred_username');
  },
};
