import { expect } from 'chai';
import * as client from 'openid-client';
import { call, expectApiError } from '../helpers/api.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { Browser, signIn } from '../helpers/browser.js';
import { makeApp, makeGroup, makeUser, personalToken, type TestUser } from '../helpers/factories.js';
import { fieldError } from '../helpers/html.js';
import { authorize, tokenRequest } from '../helpers/oauth.js';

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
