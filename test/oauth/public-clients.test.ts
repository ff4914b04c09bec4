import { expect } from 'chai';
import * as client from 'openid-client';
import { call, expectApiError } from '../helpers/api.js';
import { describeEachProfile, freePort, useIdp } from '../helpers/app.js';
import { Browser, signIn } from '../helpers/browser.js';
import { makeApp, makeGroup, makeUser, personalToken, type TestUser } from '../helpers/factories.js';
import { fieldError } from '../helpers/html.js';
import { authorize, authorizeUrl, callbackOf, tokenRequest } from '../helpers/oauth.js';

const REDIRECT_URI = 'http://127.0.0.1:9999/native/callback';

/**
 * Public clients: native and single-page applications, which cannot keep a secret. They have
 * none, send only their client_id to the token endpoint, and must use PKCE (S256) at authorize.
 */
describeEachProfile('Public clients (no secret, PKCE required)', (profile) => {
  const idp = useIdp(profile);
  let user: TestUser;
  let clientId: string;
  let config: client.Configuration;

  before(async () => {
    user = await makeUser(idp.db);
    const group = await makeGroup(idp.db, user.id);
    ({ clientId } = await makeApp(idp.db, user.id, group.id, { callbackURL: REDIRECT_URI, type: 'public' }));
    // Discovery over plain http is allowed here only because the test server is on loopback.
    config = await client.discovery(new URL(idp.url), clientId, { token_endpoint_auth_method: 'none' }, client.None(), {
      execute: [client.allowInsecureRequests],
    });
  });

  it('has no secret, and discovery offers token_endpoint_auth_method none', async () => {
    const app = await idp.db('oauth_apps').where({ client_id: clientId }).first();
    expect(app.client_type).to.equal('public');
    expect(await idp.db('oauth_app_secrets').where({ app_id: app.id })).to.have.length(0);
    expect(config.serverMetadata().token_endpoint_auth_methods_supported).to.include('none');
  });

  it('runs the whole flow with openid-client and no secret: PKCE, ID token, API, refresh', async () => {
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT_URI,
      scope: 'openid groups:read-only',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
    });
    const extra = { code_challenge: url.searchParams.get('code_challenge')!, code_challenge_method: 'S256' };
    const callback = await authorize(new Browser(idp.url), { clientId, redirectUri: REDIRECT_URI, state, scope: 'openid groups:read-only', extra }, user);

    const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state });
    expect(tokens.access_token).to.match(/^ho_/);
    expect(tokens.refresh_token).to.match(/^hr_/);
    expect(tokens.claims()!.sub).to.equal(String(user.id));

    const groups = await client.fetchProtectedResource(config, tokens.access_token, new URL(`${idp.url}/apis/v2/groups`), 'GET');
    expect(groups.status).to.equal(200);

    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
    expect(refreshed.access_token).to.match(/^ho_/).and.not.equal(tokens.access_token);
  });

  it('matches its loopback callback on any port (RFC 8252): openid-client completes a flow on an ephemeral port, 127.0.0.1 and [::1]', async () => {
    const group = await makeGroup(idp.db, user.id);
    for (const host of ['127.0.0.1', '[::1]']) {
      const registered = `http://${host}/native/callback`;
      const app = await makeApp(idp.db, user.id, group.id, { callbackURL: registered, type: 'public' });
      const native = await client.discovery(new URL(idp.url), app.clientId, { token_endpoint_auth_method: 'none' }, client.None(), { execute: [client.allowInsecureRequests] });
      // The port the app's listener got from the system when it started.
      const redirectUri = `http://${host}:${await freePort()}/native/callback`;
      const verifier = client.randomPKCECodeVerifier();
      const state = client.randomState();
      const extra = { code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' };
      const callback = await authorize(new Browser(idp.url), { clientId: app.clientId, redirectUri, state, scope: 'openid groups:read-only', extra }, user);
      expect(callback.searchParams.get('code'), callback.href).to.be.a('string');
      const tokens = await client.authorizationCodeGrant(native, callback, { pkceCodeVerifier: verifier, expectedState: state }, { redirect_uri: redirectUri });
      expect(tokens.access_token).to.match(/^ho_/);
      expect(tokens.claims()!.sub).to.equal(String(user.id));
    }
  });

  it('keeps a confidential application’s callback matched exactly, port included', async () => {
    const group = await makeGroup(idp.db, user.id);
    const confidential = await makeApp(idp.db, user.id, group.id, { callbackURL: 'http://127.0.0.1:9999/dev/callback' });
    const page = await new Browser(idp.url).get(authorizeUrl(idp.url, { clientId: confidential.clientId, redirectUri: 'http://127.0.0.1:9998/dev/callback' }));
    expect(page.status).to.equal(400);
    expect(page.headers.get('location')).to.equal(null);
  });

  it('asks for consent on every authorization, even after an earlier one: a second program on its port gets no code silently', async () => {
    const person = await makeUser(idp.db);
    const browser = new Browser(idp.url);
    const pkce = async () => ({ code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()), code_challenge_method: 'S256' });
    const first = await authorize(browser, { clientId, redirectUri: REDIRECT_URI, extra: await pkce() }, person);
    expect(first.searchParams.get('code')).to.be.a('string');
    expect(await idp.db('user_grants').where({ user_id: person.id, client_id: clientId })).to.have.length(1);

    const again = await browser.follow(authorizeUrl(idp.url, { clientId, redirectUri: REDIRECT_URI, extra: await pkce() }), REDIRECT_URI);
    expect(again.status, again.headers.get('location') ?? '').to.equal(200);
    expect(again.text).to.include('/confirm"');

    const silent = callbackOf(await browser.follow(authorizeUrl(idp.url, { clientId, redirectUri: REDIRECT_URI, state: 'quiet', extra: { ...(await pkce()), prompt: 'none' } }), REDIRECT_URI), REDIRECT_URI);
    expect(silent.searchParams.get('error')).to.equal('consent_required');
    expect(silent.searchParams.get('code')).to.equal(null);
    expect(silent.searchParams.get('state')).to.equal('quiet');
  });

  it('refuses localhost as a public application’s callback (API and page alike), naming callbackURL; a confidential one keeps it', async () => {
    const owner = await makeUser(idp.db);
    const group = await makeGroup(idp.db, owner.id);
    const token = await personalToken(idp.db, owner.id, { scopes: ['groups:read-write'] });
    const json = (method: string, path: string, body: unknown) =>
      call(idp, `/apis/v2${path}`, { token, method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const fields = { name: 'Phone app', homepageURL: 'https://phone.example.test', callbackURL: 'http://localhost:8400/callback' };

    const refused = await json('POST', `/groups/${group.id}/oauth-apps`, { ...fields, type: 'public' });
    expectApiError(refused, 400, 'invalid_request');
    expect(refused.body.error_description).to.equal('callbackURL must not use localhost in a public application: use http://127.0.0.1 or http://[::1], on any port');
    expect(await idp.db('oauth_apps').where({ group_id: group.id })).to.have.length(0);

    const publicApp = await json('POST', `/groups/${group.id}/oauth-apps`, { ...fields, callbackURL: 'http://127.0.0.1/callback', type: 'public' });
    expect(publicApp.status, publicApp.text).to.equal(201);
    const moved = await json('PATCH', `/oauth-apps/${publicApp.body.data.clientID}`, { callbackURL: 'http://localhost/callback' });
    expectApiError(moved, 400, 'invalid_request');
    expect(moved.body.error_description).to.match(/^callbackURL must not use localhost/);

    const confidential = await json('POST', `/groups/${group.id}/oauth-apps`, fields);
    expect(confidential.status, confidential.text).to.equal(201);

    const browser = await signIn(idp.url, owner);
    const developer = `/groups/${group.path}/settings/developer`;
    await browser.get(`${developer}/apps/new`).expect(200);
    const page = await browser.submit(`${developer}/apps`, { ...fields, description: '', signOutRedirectURLs: '', type: 'public' }).expect(400);
    expect(fieldError(page.text, 'callbackURL')).to.match(/^Authorization callback URL must not use localhost in a public application/);
    expect(await idp.db('oauth_apps').where({ group_id: group.id, client_type: 'public' })).to.have.length(1);
  });

  it('refuses an authorization request without a code_challenge, back at the callback', async () => {
    const callback = await authorize(new Browser(idp.url), { clientId, redirectUri: REDIRECT_URI, state: 'no-pkce' }, user);
    expect(callback.searchParams.get('error')).to.equal('invalid_request');
    expect(callback.searchParams.get('error_description')).to.match(/requires PKCE/);
    expect(callback.searchParams.get('code')).to.equal(null);
    expect(callback.searchParams.get('state')).to.equal('no-pkce');
  });

  it('refuses a code exchange without its code_verifier', async () => {
    const verifier = client.randomPKCECodeVerifier();
    const extra = { code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' };
    const callback = await authorize(new Browser(idp.url), { clientId, redirectUri: REDIRECT_URI, extra }, user);
    const res = await tokenRequest(idp.url, { form: { grant_type: 'authorization_code', client_id: clientId, code: callback.searchParams.get('code')!, redirect_uri: REDIRECT_URI } });
    expect(res.status, res.text).to.equal(400);
    expect(res.body.error).to.equal('invalid_grant');
  });

  it('keeps PKCE optional for a confidential client', async () => {
    const group = await makeGroup(idp.db, user.id);
    const confidential = await makeApp(idp.db, user.id, group.id, { callbackURL: REDIRECT_URI });
    const callback = await authorize(new Browser(idp.url), { clientId: confidential.clientId, redirectUri: REDIRECT_URI }, user);
    expect(callback.searchParams.get('code')).to.be.a('string');
  });

  it('is a type in the API: created without a secret, no secret to generate, the type fixed', async () => {
    const owner = await makeUser(idp.db);
    const group = await makeGroup(idp.db, owner.id);
    const token = await personalToken(idp.db, owner.id, { scopes: ['groups:read-write'] });
    const json = (method: string, path: string, body?: unknown) =>
      call(idp, `/apis/v2${path}`, { token, method, ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }) });
    const fields = { name: 'Phone app', homepageURL: 'https://phone.example.test', callbackURL: REDIRECT_URI };

    const created = await json('POST', `/groups/${group.id}/oauth-apps`, { ...fields, type: 'public' });
    expect(created.status, created.text).to.equal(201);
    expect(created.body.data.type).to.equal('public');
    expect(created.body.data).to.not.have.property('clientSecret');
    expect(created.body.data.secrets).to.deep.equal([]);
    const id = created.body.data.clientID as string;

    expectApiError(await json('POST', `/oauth-apps/${id}/secrets`, {}), 409, 'conflict');
    const changed = await json('PATCH', `/oauth-apps/${id}`, { type: 'confidential' });
    expectApiError(changed, 400, 'invalid_request');
    expect(changed.body.error_description).to.match(/type/);
    const bad = await json('POST', `/groups/${group.id}/oauth-apps`, { ...fields, type: 'spa' });
    expectApiError(bad, 400, 'invalid_request');
    expect(bad.body.error_description).to.equal('type must be confidential or public');

    const confidential = await json('POST', `/groups/${group.id}/oauth-apps`, fields);
    expect(confidential.body.data.type).to.equal('confidential');
    expect(confidential.body.data.clientSecret).to.match(/^hs_/);
  });

  it('is a choice on the New application page: a public one shows no secret and cannot make one', async () => {
    const owner = await makeUser(idp.db);
    const group = await makeGroup(idp.db, owner.id);
    const browser = await signIn(idp.url, owner);
    const developer = `/groups/${group.path}/settings/developer`;
    const form = await browser.get(`${developer}/apps/new`).expect(200);
    expect(form.text).to.match(/value="confidential"[^>]* checked>/);
    const fields = { name: 'Phone app', homepageURL: 'https://phone.example.test', description: '', callbackURL: REDIRECT_URI, signOutRedirectURLs: '' };

    const refused = await browser.submit(`${developer}/apps`, { ...fields, type: 'spa' }).expect(400);
    expect(fieldError(refused.text, 'type')).to.equal('Application type must be confidential or public');
    expect(await idp.db('oauth_apps').where({ group_id: group.id })).to.have.length(0);

    const created = await browser.submit(`${developer}/apps`, { ...fields, type: 'public' });
    expect(created.status).to.be.oneOf([201, 302, 303]);
    const app = await idp.db('oauth_apps').where({ group_id: group.id }).first();
    expect(app.client_type).to.equal('public');
    const page = await browser.get(`${developer}/apps/${app.client_id}`).expect(200);
    expect(/data-testid="app-type">([^<]*)</.exec(page.text)?.[1]).to.equal('Public');
    expect(page.text).to.include('data-testid="public-client"').and.not.include('data-testid="client-secret"').and.not.include('/secrets"');
    // A request made anyway (an old page, a script) is refused, and nothing is made.
    await browser.submit(`${developer}/apps/${app.client_id}/secrets`).expect(409);
    expect(await idp.db('oauth_app_secrets').where({ app_id: app.id })).to.have.length(0);
  });
});
