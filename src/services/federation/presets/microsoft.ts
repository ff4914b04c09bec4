import type * as client from 'openid-client';
import type { UpstreamKind, UpstreamProvider } from '../upstream.js';
import { UpstreamAnswerError, cachedConfiguration, discover, insecureAllowed, urlSetting, stringClaim, timedFetch, trueClaim } from '../discovery.js';
import { oidcClaims, standardProfile } from '../oidc-profile.js';

/**
 * Microsoft Entra ID (work and school accounts, and personal Microsoft accounts through the
 * `common` and `consumers` tenants), OpenID Connect v2.0 at <authority>/<tenant>/v2.0.
 *
 * Who is signed in: `sub`. It is pairwise (the same person has another `sub` in another app
 * registration) but stable for this registration, it is the subject the ID token and userinfo are
 * about, and it exists for personal accounts as for work ones. `oid` + `tid` would follow the
 * person across registrations; that is not needed here, and a new registration (a new client ID)
 * means people link again.
 *
 * The address: Entra's `email` claim is whatever the tenant's administrators entered and is not
 * verified by Microsoft, so it counts as verified only when the optional claim `xms_edov` ("e-mail
 * domain owner verified") is true. Add both `email` and `xms_edov` as optional claims of the ID
 * token in the app registration for an address to match or create accounts.
 */

const PUBLIC_CLOUD = 'https://login.microsoftonline.com';
const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const DOMAIN = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/;
/** The tenants that stand for many: their discovery issuer is a template with `{tenantid}`. */
const MULTI_TENANT = new Set(['common', 'organizations', 'consumers']);
const TEMPLATE = '{tenantid}';

export function parseTenant(value: string): string {
  const tenant = value.trim().toLowerCase();
  if (!tenant) throw new Error('the tenant is required: a tenant ID, a verified domain, or organizations, common or consumers');
  if (!MULTI_TENANT.has(tenant) && !GUID.test(tenant) && !DOMAIN.test(tenant)) {
    throw new Error('the tenant must be a tenant ID (a GUID), a verified domain such as contoso.onmicrosoft.com, or organizations, common or consumers');
  }
  return tenant;
}

/**
 * The issuer the discovery document names must be <origin>/<tenant ID>/v2.0: the configured tenant
 * when it is a tenant ID, any tenant ID for a domain (the document names the domain's tenant), and
 * for `common` and `organizations` the `{tenantid}` template. The document itself is trusted as
 * what the configured authority served over TLS; its issuer may be on another host (Azure China's
 * tokens name login.partner.microsoftonline.cn).
 */
function checkDiscoveredIssuer(issuer: string, tenant: string): void {
  let path: string;
  try {
    path = new URL(issuer.replace(TEMPLATE, 'template')).pathname;
  } catch {
    throw new UpstreamAnswerError('Microsoft\'s discovery document names no valid issuer');
  }
  const match = /^\/([^/]+)\/v2\.0\/?$/.exec(path);
  const named = match?.[1] === 'template' && issuer.includes(TEMPLATE) ? TEMPLATE : match?.[1];
  const fits = named === TEMPLATE
    ? tenant === 'common' || tenant === 'organizations'
    : !!named && GUID.test(named) && (!GUID.test(tenant) || named === tenant);
  if (!fits) throw new UpstreamAnswerError(`Microsoft's discovery document names the issuer ${issuer}, which is not the tenant ${tenant}'s`);
}

/**
 * Discovery that validates ID tokens the way Entra issues them. openid-client does this itself for
 * the public cloud: when the address discovered is on https://login.microsoftonline.com, it accepts
 * a discovered issuer that differs from that address (a domain tenant, the multi-tenant template)
 * and checks each ID token's `iss` against the discovered issuer with the token's own `tid` put in
 * place of `{tenantid}`. It has no public switch for other hosts, so for a national cloud (or a
 * stand-in) discovery is asked for at the public cloud's address and this fetch sends that one
 * request to the configured authority instead; every later request goes where the document says.
 * The discovered issuer is then checked here against the tenant, which openid-client leaves to us
 * once it accepts a differing issuer.
 */
async function configure(provider: UpstreamProvider, timeoutMs: number, allowHttp?: boolean): Promise<client.Configuration> {
  const authority = provider.settings.authority || PUBLIC_CLOUD;
  const tenant = parseTenant(provider.settings.tenant ?? '');
  const asked = new URL(`${PUBLIC_CLOUD}/${encodeURIComponent(tenant)}/v2.0`);
  const real = new URL(`${authority}/${encodeURIComponent(tenant)}/v2.0`);
  const base = timedFetch(timeoutMs);
  const discoveryUrl = `${asked.href}/.well-known/openid-configuration`;
  const fetcher: client.CustomFetch = (url, options) => base(url === discoveryUrl ? `${real.href}/.well-known/openid-configuration` : url, options);
  const config = await discover(asked, provider, timeoutMs, fetcher, { insecure: insecureAllowed(real, allowHttp) });
  checkDiscoveredIssuer(config.serverMetadata().issuer, tenant);
  return config;
}

export const microsoft: UpstreamKind = {
  kind: 'microsoft',
  signIn: 'redirect',
  label: 'Microsoft',
  settings: [
    {
      name: 'tenant',
      label: 'Tenant',
      hint: 'The directory (tenant) ID or a verified domain for one organization; organizations for any work or school account; common to add personal Microsoft accounts; consumers for personal accounts only.',
      required: true,
      parse: parseTenant,
    },
    urlSetting('authority', 'Authority', 'Leave empty for the global cloud (https://login.microsoftonline.com). For a national cloud, its sign-in host, such as https://login.microsoftonline.us or https://login.chinacloudapi.cn.'),
  ],
  defaultScopes: ['openid', 'email', 'profile'],
  usesIdToken: true,
  configure(provider, { timeoutMs, allowHttp }) {
    return cachedConfiguration(provider, () => configure(provider, timeoutMs, allowHttp));
  },
  async profile(config, tokens) {
    const claims = await oidcClaims(config, tokens, 'Microsoft');
    const profile = standardProfile({ ...claims, email_verified: trueClaim(claims, 'xms_edov') }, 'preferred_username');
    // preferred_username is the sign-in name (a UPN or an address); suggest its local part.
    profile.username = stringClaim(claims, 'preferred_username').split('@')[0] || profile.username;
    return profile;
  },
};
