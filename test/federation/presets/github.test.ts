import { expect } from 'chai';
import * as client from 'openid-client';
import { UpstreamAnswerError, forgetConfigurations } from '../../../src/services/federation/discovery.js';
import { github, githubEndpoints, verifiedPrimary } from '../../../src/services/federation/presets/github.js';
import { kindOf } from '../../../src/services/federation/kinds.js';
import { approve, fakeGitHub, octocat } from './github-standin.js';
import { listen, providerOf, signIn } from './harness.js';

describe('GitHub sign-in kind (a local server answering as GitHub documents)', () => {
  let ghes: Awaited<ReturnType<typeof listen>>;
  let fake: ReturnType<typeof fakeGitHub>;

  beforeEach(async () => {
    forgetConfigurations();
    fake = fakeGitHub('/api/v3');
    ghes = await listen(fake.handler);
    fake.state.user = { ...octocat };
    fake.state.emails = [
      { email: 'octocat@github.com', primary: true, verified: true, visibility: 'public' },
      { email: 'other@example.com', primary: false, verified: true, visibility: null },
    ];
  });
  afterEach(() => ghes.close());

  it('is registered as the github kind with read:user and user:email by default', () => {
    expect(kindOf('github')).to.equal(github);
    expect(github.defaultScopes).to.deep.equal(['read:user', 'user:email']);
    expect(github.usesIdToken).to.equal(false);
  });

  it('signs in through an Enterprise Server base URL: the numeric id as subject, the login, the verified primary address', async () => {
    const provider = providerOf(github, { base_url: ghes.url });
    const { profile, url } = await signIn(github, provider, approve);
    expect(url.origin + url.pathname).to.equal(`${ghes.url}/login/oauth/authorize`);
    expect(url.searchParams.get('scope')).to.equal('read:user user:email');
    expect(profile).to.deep.equal({ subject: '583231', username: 'octocat', name: 'The Octocat', email: 'octocat@github.com', emailVerified: true, amr: [] });
    // The secret goes in the form body, the PKCE verifier with it.
    expect(fake.state.seen.token?.get('client_secret')).to.equal('our-client-secret');
    expect(fake.state.seen.token?.get('code_verifier')).to.have.length.greaterThan(42);
    for (const headers of fake.state.seen.apiHeaders) {
      expect(headers.accept).to.equal('application/vnd.github+json');
      expect(headers['x-github-api-version']).to.equal('2022-11-28');
    }
    expect(fake.state.seen.apiHeaders).to.have.length(2);
  });

  it('counts no address as verified when the primary one is unverified, even if another is verified', async () => {
    fake.state.emails = [
      { email: 'victim@example.com', primary: true, verified: false, visibility: 'private' },
      { email: 'mine@example.com', primary: false, verified: true, visibility: null },
    ];
    const { profile } = await signIn(github, providerOf(github, { base_url: ghes.url }), approve);
    expect(profile.email).to.equal('');
    expect(profile.emailVerified).to.equal(false);
  });

  it('gives the public address as unverified when no verified primary exists', async () => {
    fake.state.user = { ...octocat, email: 'Public@Example.com' };
    fake.state.emails = [{ email: 'public@example.com', primary: true, verified: false, visibility: 'public' }];
    const { profile } = await signIn(github, providerOf(github, { base_url: ghes.url }), approve);
    expect(profile.email).to.equal('public@example.com');
    expect(profile.emailVerified).to.equal(false);
  });

  it('falls back to the public address, unverified, when the user:email scope was not granted', async () => {
    fake.state.user = { ...octocat, email: 'octocat@github.com' };
    fake.state.emailsStatus = 404;
    const { profile } = await signIn(github, providerOf(github, { base_url: ghes.url }), approve);
    expect(profile).to.include({ email: 'octocat@github.com', emailVerified: false });
  });

  it('reports GitHub\'s 200-with-error answer to a bad code as that OAuth error', async () => {
    const provider = providerOf(github, { base_url: ghes.url });
    const err = await signIn(github, provider, async (url) => {
      const callback = await approve(url);
      callback.searchParams.set('code', 'not-a-code-github-issued');
      return callback;
    }).then(() => undefined, (e: unknown) => e);
    expect(err).to.be.instanceOf(client.ResponseBodyError);
    expect((err as client.ResponseBodyError).error).to.equal('bad_verification_code');
    expect((err as client.ResponseBodyError).error_description).to.equal('The code passed is incorrect or expired.');
  });

  it('reports a wrong client secret as incorrect_client_credentials', async () => {
    const provider = providerOf(github, { base_url: ghes.url }, { client_secret: 'wrong' });
    const err = await signIn(github, provider, approve).then(() => undefined, (e: unknown) => e);
    expect(err).to.be.instanceOf(client.ResponseBodyError);
    expect((err as client.ResponseBodyError).error).to.equal('incorrect_client_credentials');
  });

  it('refuses a replayed callback: GitHub takes a code once', async () => {
    const provider = providerOf(github, { base_url: ghes.url });
    let replay: URL | undefined;
    const first = await signIn(github, provider, async (url) => {
      replay = await approve(url);
      return replay;
    });
    const config = await github.configure(provider, { timeoutMs: 5000 });
    const err = await client.authorizationCodeGrant(config, replay!, { pkceCodeVerifier: first.verifier, expectedState: first.state })
      .then(() => undefined, (e: unknown) => e);
    expect(err).to.be.instanceOf(client.ResponseBodyError);
    expect((err as client.ResponseBodyError).error).to.equal('bad_verification_code');
  });

  it('refuses a callback whose state is not the one sent', async () => {
    const err = await signIn(github, providerOf(github, { base_url: ghes.url }), async (url) => {
      const callback = await approve(url);
      callback.searchParams.set('state', client.randomState());
      return callback;
    }).then(() => undefined, (e: unknown) => e);
    expect(err).to.be.instanceOf(Error);
    expect((err as Error & { cause?: Error }).cause?.message).to.match(/"state"/);
  });

  it('raises a clear error when /user fails', async () => {
    fake.state.userStatus = 502;
    const err = await signIn(github, providerOf(github, { base_url: ghes.url }), approve).then(() => undefined, (e: unknown) => e);
    expect(err).to.be.instanceOf(UpstreamAnswerError);
    expect((err as Error).message).to.equal('GitHub answered /user with HTTP 502');
  });

  it('raises a clear error when /user has no numeric id', async () => {
    fake.state.user = { login: 'octocat' };
    const err = await signIn(github, providerOf(github, { base_url: ghes.url }), approve).then(() => undefined, (e: unknown) => e);
    expect(err).to.be.instanceOf(UpstreamAnswerError);
    expect((err as Error).message).to.match(/numeric id/);
  });

  it('gives up on an API that does not answer within the timeout', async () => {
    fake.state.userDelayMs = 8000;
    const provider = providerOf(github, { base_url: ghes.url });
    const config = await github.configure(provider, { timeoutMs: 300 });
    const started = Date.now();
    const err = await github.profile(config, { access_token: 'x', token_type: 'bearer' } as never, { timeoutMs: 300 }).then(() => undefined, (e: unknown) => e);
    expect((err as Error & { cause?: Error }).cause?.name).to.equal('TimeoutError');
    expect(Date.now() - started).to.be.lessThan(3000);
  });

  it('reads the API at an overriding api_url', async () => {
    await ghes.close();
    fake = fakeGitHub('/proxy/github-api');
    ghes = await listen(fake.handler);
    fake.state.user = { ...octocat };
    fake.state.emails = [{ email: 'octocat@github.com', primary: true, verified: true, visibility: 'public' }];
    const provider = providerOf(github, { base_url: ghes.url, api_url: `${ghes.url}/proxy/github-api` });
    const { profile } = await signIn(github, provider, approve);
    expect(profile.subject).to.equal('583231');
  });

  it('uses github.com and api.github.com by default, <base>/api/v3 for Enterprise Server', () => {
    expect(githubEndpoints({})).to.deep.equal({
      base: 'https://github.com',
      api: 'https://api.github.com',
      authorize: 'https://github.com/login/oauth/authorize',
      token: 'https://github.com/login/oauth/access_token',
    });
    const base = github.settings.find((s) => s.name === 'base_url')!.parse('https://ghe.example.com/');
    expect(githubEndpoints({ base_url: base })).to.deep.equal({
      base: 'https://ghe.example.com',
      api: 'https://ghe.example.com/api/v3',
      authorize: 'https://ghe.example.com/login/oauth/authorize',
      token: 'https://ghe.example.com/login/oauth/access_token',
    });
  });

  it('refuses base URLs that are not https, carry a query, or are not URLs', () => {
    const parse = github.settings.find((s) => s.name === 'base_url')!.parse;
    expect(() => parse('http://ghe.example.com')).to.throw(/https/);
    expect(() => parse('https://ghe.example.com/?x=1')).to.throw(/query/);
    expect(() => parse('ghe.example.com')).to.throw(/absolute URL/);
    expect(() => parse('https://user:pw@ghe.example.com')).to.throw(/password/);
    expect(parse('')).to.equal('');
  });

  it('picks only a verified primary address', () => {
    expect(verifiedPrimary([{ email: 'A@x.org', primary: true, verified: true }])).to.equal('a@x.org');
    expect(verifiedPrimary([{ email: 'a@x.org', primary: false, verified: true }])).to.equal('');
    expect(verifiedPrimary({ email: 'a@x.org' })).to.equal('');
  });
});
