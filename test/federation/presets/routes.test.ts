import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { findIdentity } from '../../../src/db/identities.js';
import { insertSignInProvider } from '../../../src/db/sign-in-providers.js';
import { findUserByUsername } from '../../../src/db/users.js';
import { sealClientSecret } from '../../../src/services/federation/providers.js';
import { now } from '../../../src/time.js';
import { describeEachProfile, useIdp } from '../../helpers/app.js';
import { Browser } from '../../helpers/browser.js';
import { filledForm, inputValue, unescapeHtml } from '../../helpers/html.js';
import { fakeGitHub, octocat } from './github-standin.js';
import { listen, startOidcUpstream } from './harness.js';

/**
 * The GitHub kind through the sign-in pages: Continue with GitHub, the stand-in's round trip, the
 * prefilled sign-up.
 */

describeEachProfile('Sign-in with GitHub through the sign-in pages (a local server answering as GitHub documents)', (profile) => {
  const idp = useIdp(profile);
  let standIn: Awaited<ReturnType<typeof listen>>;
  let fake: ReturnType<typeof fakeGitHub>;
  let providerId = 0;

  before(async () => {
    fake = fakeGitHub('/api/v3');
    standIn = await listen(fake.handler);
    const row = await insertSignInProvider(idp.db, {
      slug: 'gh', kind: 'github', name: 'GitHub', client_id: 'our-client-id',
      client_secret: sealClientSecret(undefined, 'our-client-secret'), scopes: '',
      settings: JSON.stringify({ base_url: standIn.url }), allow_sign_up: true, allowed_domains: '', trust_mfa: false, position: 0,
    }, now());
    providerId = row!.id;
  });
  after(() => standIn.close());

  async function continueWithGitHub(b: Browser) {
    const page = await b.get('/login').expect(200);
    expect(page.text).to.include('Continue with GitHub');
    const moving = await b.fill(page, '/login/upstream/gh').expect(200);
    const href = unescapeHtml(/href="([^"]+)" data-testid="upstream-continue"/.exec(moving.text)?.[1] ?? '');
    expect(href.startsWith(`${standIn.url}/login/oauth/authorize?`), href).to.equal(true);
    expect(new URL(href).searchParams.get('scope')).to.equal('read:user user:email');
    return b.follow(href);
  }

  it('signs up from GitHub\'s verified primary address, then signs in again with the same GitHub account', async () => {
    const login = `octo-${randomBytes(3).toString('hex')}`;
    fake.state.user = { ...octocat, login, id: 1_000_000 + Math.floor(Math.random() * 1e6) };
    fake.state.emails = [{ email: `${login}@example.test`, primary: true, verified: true, visibility: null }];
    const b = new Browser(idp.url, { also: [standIn.url] });
    const signUp = await continueWithGitHub(b);
    expect(signUp.url.pathname).to.equal('/login/continue/sign-up');
    expect(inputValue(signUp.text, 'username')).to.equal(login);
    expect(signUp.text).to.include('data-testid="sign-up-email-verified"');
    const form = filledForm(signUp.text, '/login/continue/sign-up', {});
    await b.postForm(form.action, form.fields).expect(302, '/groups');
    const user = (await findUserByUsername(idp.db, login))!;
    expect(user.email).to.equal(`${login}@example.test`);
    expect((await findIdentity(idp.db, providerId, String(fake.state.user.id)))!.user_id).to.equal(user.id);

    const again = new Browser(idp.url, { also: [standIn.url] });
    const landed = await continueWithGitHub(again);
    expect(landed.url.pathname).to.equal('/groups');
  });

  it('shows a failure page, not an error, when GitHub refuses the code', async () => {
    fake.state.user = { ...octocat };
    const b = new Browser(idp.url, { also: [standIn.url] });
    const page = await b.get('/login').expect(200);
    const moving = await b.fill(page, '/login/upstream/gh').expect(200);
    const href = unescapeHtml(/href="([^"]+)" data-testid="upstream-continue"/.exec(moving.text)?.[1] ?? '');
    fake.state.codes.clear();
    const res = await fetch(href, { redirect: 'manual' });
    const callback = new URL(res.headers.get('location')!);
    fake.state.codes.clear();
    const failed = await b.get(callback.pathname + callback.search);
    expect(failed.status).to.be.within(400, 599);
    expect(failed.status).to.not.equal(500);
    expect(failed.text).to.include('GitHub');
  });
});


const TENANT = '0b9a1c2d-3e4f-4a5b-8c6d-7e8f9a0b1c2d';

/** Entra ID's multi-tenant template issuer through the sign-in pages: the ID token checked against its own tid. */
describeEachProfile('Sign-in with Microsoft (organizations) through the sign-in pages (a real oidc-provider laid out as Entra ID)', (profile) => {
  const idp = useIdp(profile);
  let entra: Awaited<ReturnType<typeof startOidcUpstream>>;

  before(async () => {
    entra = await startOidcUpstream({
      mountPath: `/${TENANT}/v2.0`,
      redirectUris: [`${idp.url}/login/callback/ms`],
      issInResponse: false,
      scopeClaims: { openid: ['sub', 'tid'], email: ['email', 'xms_edov'], profile: ['name', 'preferred_username'] },
      async extraRoutes(path, base, issuerDocument) {
        if (path !== '/organizations/v2.0/.well-known/openid-configuration') return undefined;
        const { authorization_response_iss_parameter_supported: _dropped, ...doc } = await issuerDocument();
        return { ...doc, issuer: `${base}/{tenantid}/v2.0` };
      },
    });
    await insertSignInProvider(idp.db, {
      slug: 'ms', kind: 'microsoft', name: 'Microsoft', client_id: 'our-client-id',
      client_secret: sealClientSecret(undefined, 'our-client-secret'), scopes: '',
      settings: JSON.stringify({ tenant: 'organizations', authority: entra.base }), allow_sign_up: true, allowed_domains: '', trust_mfa: false, position: 0,
    }, now());
  });
  after(() => entra?.close());

  async function continueWithMicrosoft(b: Browser) {
    const page = await b.get('/login').expect(200);
    const moving = await b.fill(page, '/login/upstream/ms').expect(200);
    const href = unescapeHtml(/href="([^"]+)" data-testid="upstream-continue"/.exec(moving.text)?.[1] ?? '');
    expect(href.startsWith(`${entra.base}/${TENANT}/v2.0/auth?`), href).to.equal(true);
    return b.follow(href);
  }

  it('signs up a person of any organization, the address unverified without xms_edov', async () => {
    const id = randomBytes(3).toString('hex');
    entra.accounts.set(`sub-${id}`, { claims: { tid: TENANT, name: 'Ada', preferred_username: `ada-${id}@contoso.example`, email: `ada-${id}@contoso.example` } });
    entra.signInAs(`sub-${id}`);
    const signUp = await continueWithMicrosoft(new Browser(idp.url, { also: [entra.base] }));
    expect(signUp.url.pathname).to.equal('/login/continue/sign-up');
    expect(inputValue(signUp.text, 'username')).to.equal(`ada-${id}`);
    expect(signUp.text).to.include('data-testid="sign-up-email-unverified"');
  });

  it('refuses an ID token whose tid is not the tenant its iss names, on a failure page', async () => {
    const id = randomBytes(3).toString('hex');
    entra.accounts.set(`sub-${id}`, { claims: { tid: '9f8e7d6c-5b4a-4f3e-9d2c-1b0a9f8e7d6c', name: 'Mallory', email: `m-${id}@contoso.example`, xms_edov: true } });
    entra.signInAs(`sub-${id}`);
    const failed = await continueWithMicrosoft(new Browser(idp.url, { also: [entra.base] }));
    expect(failed.url.pathname).to.equal('/login/callback/ms');
    expect(failed.status).to.equal(424);
    expect(failed.text).to.include('could not be verified');
  });
});
