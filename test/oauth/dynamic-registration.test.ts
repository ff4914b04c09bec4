import { expect } from 'chai';
import * as client from 'openid-client';
import { call } from '../helpers/api.js';
import { describeEachProfile, useIdp, type RunningIdp } from '../helpers/app.js';
import { Browser } from '../helpers/browser.js';
import { makeGroup, makeUser, type TestUser } from '../helpers/factories.js';
import { formAction } from '../helpers/html.js';
import { callbackOf } from '../helpers/oauth.js';
import { setClientRegistration } from '../../src/services/client-registration/settings.js';

const CALLBACK = 'http://127.0.0.1:9999/dcr/callback';
const CLI = { userId: 0, ip: null, admin: true };

const register = (idp: RunningIdp, body: unknown, headers: Record<string, string> = {}) =>
  call(idp, '/login/oauth/register', { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

/**
 * Dynamic Client Registration (RFC 7591) and its management (RFC 7592): off until an
 * administrator turns it on; then anyone may register a public client, which lands in the chosen
 * group as an application registered automatically, uses PKCE, and is named as not reviewed on
 * the consent page. openid-client runs the flow with the registered client.
 */
describeEachProfile('Dynamic Client Registration (RFC 7591, RFC 7592)', (profile) => {
  const idp = useIdp(profile, { RATE_LIMIT_CLIENT_REGISTRATION_IP: '1000/1h' });
  let person: TestUser;
  let group: { id: number; path: string };

  before(async () => {
    person = await makeUser(idp.db);
    const owner = await makeUser(idp.db);
    group = await makeGroup(idp.db, owner.id, { name: 'Agents' });
  });

  it('refuses registration, and leaves it out of discovery, until an administrator turns it on', async () => {
    const res = await register(idp, { redirect_uris: [CALLBACK], client_name: 'Early' });
    expect(res.status).to.equal(403);
    expect(res.body.error).to.equal('access_denied');
    const discovery = await call(idp, '/.well-known/oauth-authorization-server');
    expect(discovery.body).not.to.have.property('registration_endpoint');
    expect(await idp.db('oauth_apps').where({ name: 'Early' }).first()).to.equal(undefined);

    await setClientRegistration(idp.db, CLI, { metadataDocuments: false, dynamicRegistration: true, group: group.path });
    for (const path of ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration']) {
      expect((await call(idp, path)).body.registration_endpoint).to.equal(`${idp.url}/login/oauth/register`);
    }
  });

  it('registers a public client whatever it asks for, keeps only what the service uses, and runs the flow with it', async () => {
    const res = await register(idp, {
      redirect_uris: [CALLBACK], client_name: 'Agent', token_endpoint_auth_method: 'client_secret_basic', grant_types: ['authorization_code', 'client_credentials'],
      logo_uri: 'https://evil.example/logo.png', group_id: 1, secret_digests: ['x'],
    });
    expect(res.status, res.text).to.equal(201);
    expect(res.body).to.include({ token_endpoint_auth_method: 'none', client_name: 'Agent', application_type: 'native' });
    expect(res.body.grant_types).to.deep.equal(['authorization_code', 'refresh_token']);
    expect(res.body).not.to.have.property('client_secret');
    expect(res.body).not.to.have.property('logo_uri');
    expect(res.body).not.to.have.property('secret_digests');
    expect(res.body.client_id).to.match(/^[0-9a-f]{20}$/);
    expect(res.body.registration_client_uri).to.equal(`${idp.url}/login/oauth/register/${res.body.client_id}`);
    const clientId = String(res.body.client_id);

    const row = await idp.db('oauth_apps').where({ client_id: clientId }).first();
    expect(row).to.include({ group_id: group.id, name: 'Agent', client_type: 'public', registered_by: 'dynamic', registered_from: '127.0.0.1' });
    const audit = await idp.db('audit_events').where({ group_id: group.id, action: 'app.create', target: clientId }).first();
    expect(audit, 'in the group\'s audit log').to.not.equal(undefined);

    const config = await client.discovery(new URL(idp.url), clientId, { token_endpoint_auth_method: 'none' }, client.None(), { execute: [client.allowInsecureRequests] });
    const verifier = client.randomPKCECodeVerifier();
    const url = client.buildAuthorizationUrl(config, { redirect_uri: CALLBACK, scope: 'openid', state: 'st', code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' });
    const browser = new Browser(idp.url);
    let page = await browser.follow(url.href, CALLBACK);
    page = await browser.follow(await browser.submit(formAction(page.text, '/login'), { login: person.username, password: person.password }), CALLBACK);
    expect(page.text).to.include('data-testid="not-reviewed"').and.include('127.0.0.1');
    const back = callbackOf(await browser.follow(await browser.submit(formAction(page.text, '/confirm')), CALLBACK), CALLBACK);
    const tokens = await client.authorizationCodeGrant(config, back, { pkceCodeVerifier: verifier, expectedState: 'st' });
    expect(tokens.access_token).to.match(/^ho_/);
  });

  it('refuses metadata the service does not take, naming it, and keeps nothing', async () => {
    const cases: Array<[unknown, string]> = [
      [{ client_name: 'No redirect' }, 'invalid_redirect_uri'],
      [{ redirect_uris: ['http://localhost:9999/cb'], client_name: 'Localhost' }, 'invalid_redirect_uri'],
      [{ redirect_uris: ['http://example.com/cb'], client_name: 'Plain http' }, 'invalid_redirect_uri'],
      [{ redirect_uris: ['https://example.com/cb#frag'], client_name: 'Fragment' }, 'invalid_redirect_uri'],
      [{ redirect_uris: [CALLBACK], client_name: 'x'.repeat(101) }, 'invalid_client_metadata'],
    ];
    for (const [body, error] of cases) {
      const res = await register(idp, body);
      expect(res.status, JSON.stringify(body)).to.equal(400);
      expect(res.body.error, JSON.stringify(body)).to.equal(error);
    }
    const notJson = await call(idp, '/login/oauth/register', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{' });
    expect(notJson.status).to.equal(400);
    expect(Number(((await idp.db('oauth_apps').where({ registered_by: 'dynamic' }).count({ n: '*' }).first()) as { n: number | string }).n)).to.equal(1);
  });

  it('reads, updates and deletes a registration with its registration access token (RFC 7592), and nothing without it', async () => {
    const made = await register(idp, { redirect_uris: [CALLBACK], client_name: 'Managed' });
    const uri = String(made.body.registration_client_uri);
    const token = String(made.body.registration_access_token);
    const path = new URL(uri).pathname;

    expect((await call(idp, path)).status).to.equal(401);
    expect((await call(idp, path, { token: 'wrong' })).status).to.equal(401);
    const read = await call(idp, path, { token });
    expect(read.status).to.equal(200);
    expect(read.body).to.include({ client_id: made.body.client_id, client_name: 'Managed' });
    // Nothing of the service's own bookkeeping.
    expect(read.body).not.to.have.property('group_id');
    expect(read.body).not.to.have.property('secret_digests');

    const updated = await call(idp, path, {
      method: 'PUT', token, headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_id: made.body.client_id, redirect_uris: [CALLBACK, 'https://agent.example.com/cb'], client_name: 'Managed 2', token_endpoint_auth_method: 'none' }),
    });
    expect(updated.status, updated.text).to.equal(200);
    const row = await idp.db('oauth_apps').where({ client_id: made.body.client_id }).first();
    expect(row.name).to.equal('Managed 2');
    expect(JSON.parse(row.redirect_uris)).to.deep.equal([CALLBACK, 'https://agent.example.com/cb']);
    // The token rotates on update: the old one is spent.
    const next = String(updated.body.registration_access_token);
    expect(next).not.to.equal(token);
    expect((await call(idp, path, { token })).status).to.equal(401);

    const confidential = await call(idp, path, {
      method: 'PUT', token: next, headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_id: made.body.client_id, redirect_uris: [CALLBACK], token_endpoint_auth_method: 'client_secret_basic' }),
    });
    expect(confidential.status).to.equal(400);
    expect(confidential.body.error).to.equal('invalid_client_metadata');

    const removed = await call(idp, path, { method: 'DELETE', token: next });
    expect(removed.status).to.equal(204);
    expect(await idp.db('oauth_apps').where({ client_id: made.body.client_id }).first()).to.equal(undefined);
    expect((await call(idp, path, { token: next })).status).to.equal(401);
  });
});

describeEachProfile('Dynamic Client Registration: a flood from one address', (profile) => {
  const idp = useIdp(profile, { RATE_LIMIT_CLIENT_REGISTRATION_IP: '5/1h' });

  it('counts 16 registrations at once before any is made: five clients, eleven 429s', async () => {
    const owner = await makeUser(idp.db);
    const group = await makeGroup(idp.db, owner.id);
    await setClientRegistration(idp.db, CLI, { metadataDocuments: false, dynamicRegistration: true, group: group.path });
    const answers = await Promise.all(Array.from({ length: 16 }, (_, i) => register(idp, { redirect_uris: [CALLBACK], client_name: `Flood ${i}` })));
    expect(answers.filter((a) => a.status === 201)).to.have.length(5);
    const refused = answers.filter((a) => a.status === 429);
    expect(refused).to.have.length(11);
    expect(refused[0]!.headers.get('retry-after')).to.match(/^\d+$/);
    expect(Number(((await idp.db('oauth_apps').where({ registered_by: 'dynamic' }).count({ n: '*' }).first()) as { n: number | string }).n)).to.equal(5);
  });
});
