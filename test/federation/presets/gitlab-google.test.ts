import { expect } from 'chai';
import * as client from 'openid-client';
import { UpstreamAnswerError, forgetConfigurations } from '../../../src/services/federation/discovery.js';
import { gitlab } from '../../../src/services/federation/presets/gitlab.js';
import { google } from '../../../src/services/federation/presets/google.js';
import { kindOf } from '../../../src/services/federation/kinds.js';
import { providerOf, signIn, startOidcUpstream } from './harness.js';

/**
 * GitLab and Google are OpenID Connect providers found by discovery at their issuer; here a real
 * oidc-provider instance on a loopback port plays them, releasing the claims each documents:
 * GitLab's `nickname`, `email`, `email_verified`; Google's `email_verified` and, for Workspace
 * accounts, `hd`.
 */
describe('GitLab and Google sign-in kinds (a real OpenID Connect upstream)', () => {
  let upstream: Awaited<ReturnType<typeof startOidcUpstream>>;

  beforeEach(async () => {
    forgetConfigurations();
    upstream = await startOidcUpstream({ scopeClaims: { openid: ['sub', 'hd'] } });
    upstream.accounts.set('gl-42', { claims: { nickname: 'ada', name: 'Ada Lovelace', email: 'Ada@Example.com', email_verified: true } });
    upstream.accounts.set('gl-43', { claims: { nickname: 'bob', name: 'Bob', email: 'bob@example.com', email_verified: false } });
    upstream.accounts.set('g-1', { claims: { name: 'Carol', email: 'carol@corp.example', email_verified: true, hd: 'corp.example' } });
    upstream.accounts.set('g-2', { claims: { name: 'Dan', email: 'dan@gmail.example', email_verified: true } });
  });
  afterEach(() => upstream.close());

  it('registers gitlab and google with openid email profile by default', () => {
    expect(kindOf('gitlab')).to.equal(gitlab);
    expect(kindOf('google')).to.equal(google);
    expect(gitlab.defaultScopes).to.deep.equal(['openid', 'email', 'profile']);
    expect(google.defaultScopes).to.deep.equal(['openid', 'email', 'profile']);
  });

  it('signs in to a self-managed GitLab by its base URL: sub, nickname as username, the verified address', async () => {
    upstream.signInAs('gl-42');
    const { profile, url } = await signIn(gitlab, providerOf(gitlab, { base_url: upstream.base }), upstream.authorize);
    expect(url.origin).to.equal(upstream.base);
    expect(profile).to.deep.equal({ subject: 'gl-42', username: 'ada', name: 'Ada Lovelace', email: 'ada@example.com', emailVerified: true, amr: [] });
  });

  it('keeps an address GitLab has not confirmed unverified', async () => {
    upstream.signInAs('gl-43');
    const { profile } = await signIn(gitlab, providerOf(gitlab, { base_url: upstream.base }), upstream.authorize);
    expect(profile).to.include({ email: 'bob@example.com', emailVerified: false });
  });

  it('passes the upstream\'s amr on', async () => {
    upstream.accounts.set('gl-44', { claims: { nickname: 'eve', email: 'eve@example.com', email_verified: true }, amr: ['pwd', 'otp'] });
    upstream.signInAs('gl-44');
    const { profile } = await signIn(gitlab, providerOf(gitlab, { base_url: upstream.base }), upstream.authorize);
    expect(profile.amr).to.deep.equal(['pwd', 'otp']);
  });

  it('reads the address from userinfo when the ID token does not carry it', async () => {
    await upstream.close();
    upstream = await startOidcUpstream({ idTokenCarriesClaims: false });
    upstream.accounts.set('gl-42', { claims: { nickname: 'ada', name: 'Ada Lovelace', email: 'ada@example.com', email_verified: true } });
    upstream.signInAs('gl-42');
    const { profile, tokens } = await signIn(gitlab, providerOf(gitlab, { base_url: upstream.base }), upstream.authorize);
    expect(tokens.claims()?.email).to.equal(undefined);
    expect(profile).to.include({ subject: 'gl-42', username: 'ada', email: 'ada@example.com', emailVerified: true });
  });

  it('fails discovery clearly when the base URL is not a GitLab (no discovery document)', async () => {
    const err = await gitlab.configure(providerOf(gitlab, { base_url: `${upstream.base}/nothing-here` }), { timeoutMs: 5000 }).then(() => undefined, (e: unknown) => e);
    expect(err).to.be.instanceOf(Error);
    expect((err as Error).message).to.equal('unexpected HTTP response status code');
  });

  it('refuses a plain-http upstream when http is not allowed (production), even on loopback', async () => {
    const err = await gitlab.configure(providerOf(gitlab, { base_url: upstream.base }), { timeoutMs: 5000, allowHttp: false }).then(() => undefined, (e: unknown) => e);
    expect(err).to.be.instanceOf(client.ClientError);
    expect((err as Error).message).to.equal('only requests to HTTPS are allowed');
  });

  it('signs in with Google, suggesting the address\'s local part as the username', async () => {
    upstream.signInAs('g-2');
    const { profile } = await signIn(google, providerOf(google, { base_url: upstream.base }), upstream.authorize);
    expect(profile).to.deep.equal({ subject: 'g-2', username: 'dan', name: 'Dan', email: 'dan@gmail.example', emailVerified: true, amr: [] });
  });

  it('asks Google for the Workspace domain and accepts an account whose hd names it', async () => {
    upstream.signInAs('g-1');
    const provider = providerOf(google, { base_url: upstream.base, hd: 'corp.example' });
    const { profile, url } = await signIn(google, provider, upstream.authorize);
    expect(url.searchParams.get('hd')).to.equal('corp.example');
    expect(profile.email).to.equal('carol@corp.example');
  });

  it('refuses an account from outside the Workspace domain, the hint in the request notwithstanding', async () => {
    upstream.signInAs('g-2');
    const err = await signIn(google, providerOf(google, { base_url: upstream.base, hd: 'corp.example' }), upstream.authorize).then(() => undefined, (e: unknown) => e);
    expect(err).to.be.instanceOf(UpstreamAnswerError);
    expect((err as Error).message).to.equal('the Google account is not one of the corp.example Workspace domain');
  });

  it('checks the Workspace domain setting', () => {
    const parse = google.settings.find((s) => s.name === 'hd')!.parse;
    expect(parse(' Corp.Example ')).to.equal('corp.example');
    expect(() => parse('not a domain')).to.throw(/domain name/);
  });
});
