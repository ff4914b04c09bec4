import { createServer, type AddressInfo } from 'node:net';
import { expect } from 'chai';
import { UpstreamAnswerError, forgetConfigurations } from '../../../src/services/federation/discovery.js';
import { microsoft, parseTenant } from '../../../src/services/federation/presets/microsoft.js';
import { kindOf } from '../../../src/services/federation/kinds.js';
import { providerOf, signIn, startOidcUpstream } from './harness.js';

/**
 * Microsoft Entra ID, played by a real oidc-provider instance laid out as Entra's public
 * documentation ("Microsoft identity platform and OpenID Connect protocol", "ID token claims
 * reference", "Optional claims") describes the v2.0 endpoint:
 * - a tenant's issuer is <authority>/<tenant ID>/v2.0, its discovery document under it;
 * - the multi-tenant `common` and `organizations` documents name the issuer template
 *   <authority>/{tenantid}/v2.0, and each ID token's `iss` carries the signing-in person's own tenant,
 *   the same as its `tid` claim;
 * - a verified domain's document names the tenant's ID-based issuer;
 * - the authorization response carries no `iss`, and the discovery documents do not advertise one;
 * - `email` is not verified by Microsoft; the optional claim `xms_edov` says whether the domain
 *   owner verified it.
 * The stand-in's authority is a loopback address, so every test also runs the national-cloud path
 * (an authority other than https://login.microsoftonline.com).
 */
const TENANT_A = '0b9a1c2d-3e4f-4a5b-8c6d-7e8f9a0b1c2d';
const TENANT_B = '9f8e7d6c-5b4a-4f3e-9d2c-1b0a9f8e7d6c';

describe('Microsoft sign-in kind (a real OpenID Connect upstream laid out as Entra ID)', () => {
  let entra: Awaited<ReturnType<typeof startOidcUpstream>>;
  const asEntra = (doc: Record<string, unknown>, issuer?: string) => {
    const { authorization_response_iss_parameter_supported: _dropped, ...rest } = doc;
    return { ...rest, ...(issuer ? { issuer } : {}) };
  };

  beforeEach(async () => {
    forgetConfigurations();
    entra = await startOidcUpstream({
      mountPath: `/${TENANT_A}/v2.0`,
      // Entra sends no `iss` with the code; oidc-provider always does, so the stand-in drops it.
      issInResponse: false,
      scopeClaims: { openid: ['sub', 'tid'], email: ['email', 'xms_edov'], profile: ['name', 'preferred_username', 'oid'] },
      async extraRoutes(path, base, issuerDocument) {
        const m = /^\/([^/]+)\/v2\.0\/\.well-known\/openid-configuration$/.exec(path);
        if (!m) return undefined;
        const tenant = m[1];
        if (tenant === 'common' || tenant === 'organizations') return asEntra(await issuerDocument(), `${base}/{tenantid}/v2.0`);
        if (tenant === TENANT_A || tenant === 'contoso.example') return asEntra(await issuerDocument());
        // A document at tenant B's address that is tenant A's: what a wrong authority or a mix-up would serve.
        if (tenant === TENANT_B) return asEntra(await issuerDocument());
        if (tenant === 'wrong.example') return asEntra(await issuerDocument(), `${base}/not-a-tenant/v2.0`);
        return undefined;
      },
    });
    entra.accounts.set('pairwise-sub-ada', {
      claims: { tid: TENANT_A, oid: '11111111-2222-4333-8444-555555555555', name: 'Ada Lovelace', preferred_username: 'ada@contoso.example', email: 'Ada@Contoso.example', xms_edov: true },
    });
    entra.accounts.set('pairwise-sub-bob', {
      claims: { tid: TENANT_A, name: 'Bob', preferred_username: 'bob@contoso.example', email: 'bob@contoso.example' },
    });
    // Claims to be from tenant B while the token is issued as tenant A's: the template check must catch it.
    entra.accounts.set('pairwise-sub-mallory', {
      claims: { tid: TENANT_B, name: 'Mallory', preferred_username: 'mallory@contoso.example', email: 'mallory@contoso.example', xms_edov: true },
    });
  });
  afterEach(() => entra.close());

  const provider = (tenant: string) => providerOf(microsoft, { tenant, authority: entra.base });

  it('is registered as the microsoft kind', () => {
    expect(kindOf('microsoft')).to.equal(microsoft);
    expect(microsoft.settings.find((s) => s.name === 'tenant')?.required).to.equal(true);
  });

  it('signs in through a single tenant: sub as subject, the sign-in name\'s local part, the address verified by xms_edov', async () => {
    entra.signInAs('pairwise-sub-ada');
    const { profile, url } = await signIn(microsoft, provider(TENANT_A), entra.authorize);
    expect(url.href.startsWith(`${entra.base}/${TENANT_A}/v2.0/`)).to.equal(true);
    expect(profile).to.deep.equal({ subject: 'pairwise-sub-ada', username: 'ada', name: 'Ada Lovelace', email: 'ada@contoso.example', emailVerified: true, amr: [] });
  });

  it('treats the address as unverified without xms_edov', async () => {
    entra.signInAs('pairwise-sub-bob');
    const { profile } = await signIn(microsoft, provider(TENANT_A), entra.authorize);
    expect(profile).to.include({ email: 'bob@contoso.example', emailVerified: false });
  });

  for (const tenant of ['organizations', 'common']) {
    it(`accepts an ID token from the ${tenant} template issuer when its iss names its own tid`, async () => {
      entra.signInAs('pairwise-sub-ada');
      const { profile, config } = await signIn(microsoft, provider(tenant), entra.authorize);
      expect(config.serverMetadata().issuer).to.equal(`${entra.base}/{tenantid}/v2.0`);
      expect(profile.subject).to.equal('pairwise-sub-ada');
    });

    it(`refuses an ID token from the ${tenant} template issuer whose tid names another tenant than its iss`, async () => {
      entra.signInAs('pairwise-sub-mallory');
      const err = await signIn(microsoft, provider(tenant), entra.authorize).then(() => undefined, (e: unknown) => e);
      expect(err).to.be.instanceOf(Error);
      const cause = (err as Error & { cause?: Error & { cause?: { expected?: string } } }).cause;
      expect(cause?.message).to.equal('unexpected JWT "iss" (issuer) claim value');
      expect(cause?.cause?.expected).to.equal(`${entra.base}/${TENANT_B}/v2.0`);
    });
  }

  it('accepts a verified domain as the tenant, its document naming the tenant ID issuer', async () => {
    entra.signInAs('pairwise-sub-ada');
    const { config, profile } = await signIn(microsoft, provider('contoso.example'), entra.authorize);
    expect(config.serverMetadata().issuer).to.equal(`${entra.base}/${TENANT_A}/v2.0`);
    expect(profile.subject).to.equal('pairwise-sub-ada');
  });

  it('refuses a discovery document whose issuer is not a tenant\'s', async () => {
    const err = await microsoft.configure(provider('wrong.example'), { timeoutMs: 5000 }).then(() => undefined, (e: unknown) => e);
    expect(err).to.be.instanceOf(UpstreamAnswerError);
    expect((err as Error).message).to.match(/not the tenant wrong\.example's/);
  });

  it('refuses a tenant ID whose document names another tenant', async () => {
    const err = await microsoft.configure(providerOf(microsoft, { tenant: TENANT_B, authority: entra.base }), { timeoutMs: 5000 }).then(() => undefined, (e: unknown) => e);
    expect(err).to.be.instanceOf(UpstreamAnswerError);
    expect((err as Error).message).to.equal(`Microsoft's discovery document names the issuer ${entra.base}/${TENANT_A}/v2.0, which is not the tenant ${TENANT_B}'s`);
  });

  it('gives up on an authority that does not answer within the timeout', async () => {
    // Accepts connections and never answers.
    const silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', () => resolve()));
    const { port } = silent.address() as AddressInfo;
    const started = Date.now();
    const err = await microsoft.configure(providerOf(microsoft, { tenant: 'organizations', authority: `http://127.0.0.1:${port}` }), { timeoutMs: 300 }).then(() => undefined, (e: unknown) => e);
    silent.close();
    expect((err as Error & { cause?: Error }).cause?.name).to.equal('TimeoutError');
    expect(Date.now() - started).to.be.lessThan(3000);
  });

  it('checks the tenant and authority settings', () => {
    expect(parseTenant(' Organizations ')).to.equal('organizations');
    expect(parseTenant(TENANT_A.toUpperCase())).to.equal(TENANT_A);
    expect(parseTenant('contoso.onmicrosoft.com')).to.equal('contoso.onmicrosoft.com');
    expect(() => parseTenant('')).to.throw(/required/);
    expect(() => parseTenant('../common')).to.throw(/tenant ID/);
    const authority = microsoft.settings.find((s) => s.name === 'authority')!.parse;
    expect(authority('https://login.microsoftonline.us/')).to.equal('https://login.microsoftonline.us');
    expect(authority('https://login.chinacloudapi.cn')).to.equal('https://login.chinacloudapi.cn');
    expect(() => authority('http://login.microsoftonline.us')).to.throw(/https/);
  });
});
