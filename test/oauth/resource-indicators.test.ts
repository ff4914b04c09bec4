import { expect } from 'chai';
import * as jose from 'jose';
import * as client from 'openid-client';
import { call } from '../helpers/api.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { Browser } from '../helpers/browser.js';
import { groupAccess, makeApp, makeGroup, makeUser, type TestUser } from '../helpers/factories.js';
import { formAction } from '../helpers/html.js';
import { authorize, basicAuth, callbackOf, tokenRequest } from '../helpers/oauth.js';
import { createResource, deleteResource } from '../../src/services/resources/manage.js';

const CALLBACK = 'http://127.0.0.1:9999/mcp-client/callback';
const TOOLS = 'https://tools.example.com/mcp';
const FILES = 'https://files.example.com/';

/**
 * RFC 8707 resource indicators: a group registers the APIs it runs (resources); a client asks for
 * a token for one with `resource`, gets it bound to that one (`aud`) with that one's scopes, and
 * the token works there only: another resource's server sees it as inactive, and neither the
 * service's API nor userinfo takes it. openid-client plays the client.
 */
describeEachProfile('Resource indicators (RFC 8707) and resources of a group', (profile) => {
  const idp = useIdp(profile);
  let person: TestUser;
  let app: { clientId: string; clientSecret: string };
  let config: client.Configuration;
  let tools: { clientId: string; secret: string };
  let files: { clientId: string; secret: string };

  before(async () => {
    const owner = await makeUser(idp.db);
    const group = await makeGroup(idp.db, owner.id, { name: 'Tools team' });
    const access = await groupAccess(idp.db, owner.id, group.id);
    const deps = { db: idp.db, issuer: idp.url };
    const a = await createResource(deps, access, {
      identifier: TOOLS,
      name: 'Build tools',
      scopes: [{ name: 'tools:read', description: 'List and run the read-only tools' }, { name: 'tools:write', description: 'Run tools that change builds' }],
    });
    tools = { clientId: a.resource.clientId, secret: a.secret };
    const b = await createResource(deps, access, { identifier: 'https://files.example.com', name: 'Files', scopes: [{ name: 'files:read', description: 'Read files' }], tokenFormat: 'jwt' });
    expect(b.resource.identifier, 'stored in its normal form').to.equal(FILES);
    files = { clientId: b.resource.clientId, secret: b.secret };

    // A third party's application, in a group of its own.
    const vendor = await makeUser(idp.db);
    const vendorGroup = await makeGroup(idp.db, vendor.id);
    app = await makeApp(idp.db, vendor.id, vendorGroup.id, { callbackURL: CALLBACK });
    person = await makeUser(idp.db);
    config = await client.discovery(new URL(idp.url), app.clientId, app.clientSecret, undefined, { execute: [client.allowInsecureRequests] });
  });

  const introspect = async (as: { clientId: string; secret: string }, token: string) => {
    const res = await call(idp, '/login/oauth/introspect', {
      method: 'POST',
      headers: { authorization: basicAuth(as.clientId, as.secret), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token }).toString(),
    });
    expect(res.status, res.text).to.equal(200);
    return res.body as Record<string, unknown>;
  };

  /** authorize with `resource` (PKCE and state by openid-client) → the person consents → the code's exchange for that resource. */
  async function tokensFor(resource: string, scope: string, browser = new Browser(idp.url)) {
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const extra = { resource, code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' };
    const callback = await authorize(browser, { clientId: app.clientId, redirectUri: CALLBACK, state, scope, extra }, person);
    return client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state }, { resource });
  }

  it('names the resource, its group and its scopes in their own words on the consent page', async () => {
    const browser = new Browser(idp.url);
    const query = new URLSearchParams({ client_id: app.clientId, redirect_uri: CALLBACK, state: 's1', scope: 'tools:read', resource: TOOLS, response_type: 'code' });
    let page = await browser.follow(`/login/oauth/authorize?${query}`);
    page = await browser.follow(await browser.submit(formAction(page.text, '/login'), { login: person.username, password: person.password }));
    expect(page.text).to.include('data-testid="resource"');
    expect(page.text).to.include('Build tools').and.include(TOOLS).and.include('Tools team');
    expect(page.text).to.include('List and run the read-only tools');
    // Only what was asked for.
    expect(page.text).not.to.include('Run tools that change builds');
    // Nothing of the service's own API is asked for, so none of its scopes is offered.
    expect(page.text).not.to.include('groups:read-only');
  });

  it('issues an opaque ho_ token bound to the resource, with its scopes only, which its server introspects', async () => {
    const tokens = await tokensFor(TOOLS, 'tools:read');
    expect(tokens.access_token).to.match(/^ho_/);
    expect(tokens.scope).to.equal('tools:read');

    const seen = await introspect(tools, tokens.access_token);
    expect(seen).to.include({ active: true, aud: TOOLS, scope: 'tools:read', client_id: app.clientId, sub: String(person.id) });
    // Another resource's server learns nothing of it.
    expect(await introspect(files, tokens.access_token)).to.deep.equal({ active: false });
    // The client itself may still introspect its own token.
    expect(await introspect({ clientId: app.clientId, secret: app.clientSecret }, tokens.access_token)).to.include({ active: true, aud: TOOLS });
    // Account settings → Authorized applications lists what the person granted at the resource.
    const listed = await idp.db('user_grants').where({ user_id: person.id, client_id: app.clientId }).first();
    expect(listed.scopes.split(' ')).to.include('tools:read');
  });

  it('refuses a resource\'s token at the service\'s own API and at userinfo', async () => {
    const tokens = await tokensFor(TOOLS, 'tools:read tools:write');
    const api = await call(idp, '/apis/v2/user', { token: tokens.access_token });
    expect(api.status).to.equal(401);
    expect(api.headers.get('www-authenticate')).to.include('invalid_token');
    // Userinfo wants a token of the person with openid; this one is neither the person's for userinfo nor has that scope.
    const userinfo = await call(idp, '/login/oauth/userinfo', { token: tokens.access_token });
    expect(userinfo.status).to.be.oneOf([401, 403]);
    expect(userinfo.body).not.to.have.property('sub');
  });

  it('refreshes into a token for the same resource, and no other', async () => {
    const tokens = await tokensFor(TOOLS, 'tools:read');
    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!, { resource: TOOLS });
    expect(refreshed.access_token).to.match(/^ho_/);
    expect(await introspect(tools, refreshed.access_token)).to.include({ active: true, aud: TOOLS, scope: 'tools:read' });

    const other = await tokenRequest(idp.url, {
      headers: { authorization: basicAuth(app.clientId, app.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshed.refresh_token!, resource: FILES }).toString(),
    });
    expect(other.status, other.text).to.equal(400);
    expect(other.body.error).to.equal('invalid_target');
  });

  it('issues an RFC 9068 JWT for a jwt resource, verifiable with the JWKS', async () => {
    const tokens = await tokensFor(FILES, 'files:read');
    const jwks = jose.createRemoteJWKSet(new URL(`${idp.url}/login/oauth/jwks`));
    const { payload, protectedHeader } = await jose.jwtVerify(tokens.access_token, jwks, { issuer: idp.url, audience: FILES, typ: 'at+jwt' });
    expect(protectedHeader.alg).to.equal('RS256');
    expect(payload).to.include({ scope: 'files:read', client_id: app.clientId, sub: String(person.id) });
    expect(payload.exp! - payload.iat!).to.equal(3600);
    // Not a token of the API.
    expect((await call(idp, '/apis/v2/user', { token: tokens.access_token })).status).to.equal(401);
  });

  it('answers a resource no group registered with invalid_target, at authorize and at the token endpoint', async () => {
    const browser = new Browser(idp.url);
    const query = new URLSearchParams({ client_id: app.clientId, redirect_uri: CALLBACK, state: 's2', scope: 'tools:read', resource: 'https://unknown.example.com/mcp', response_type: 'code' });
    const page = await browser.follow(`/login/oauth/authorize?${query}`, CALLBACK);
    const back = callbackOf(page, CALLBACK);
    expect(back.searchParams.get('error')).to.equal('invalid_target');
    expect(back.searchParams.get('state')).to.equal('s2');

    const tokens = await tokensFor(TOOLS, 'tools:read');
    const res = await tokenRequest(idp.url, {
      headers: { authorization: basicAuth(app.clientId, app.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token!, resource: 'https://unknown.example.com/mcp' }).toString(),
    });
    expect(res.status).to.equal(400);
    expect(res.body.error).to.equal('invalid_target');
  });

  it('exchanges a code only for the resource it was granted for', async () => {
    const verifier = client.randomPKCECodeVerifier();
    const extra = { resource: TOOLS, code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' };
    const callback = await authorize(new Browser(idp.url), { clientId: app.clientId, redirectUri: CALLBACK, state: 's3', scope: 'tools:read', extra }, person);
    const res = await tokenRequest(idp.url, {
      headers: { authorization: basicAuth(app.clientId, app.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'authorization_code', code: callback.searchParams.get('code')!, redirect_uri: CALLBACK, code_verifier: verifier, resource: FILES }).toString(),
    });
    expect(res.status, res.text).to.equal(400);
    expect(res.body.error).to.equal('invalid_target');
  });

  it('lets a resource\'s credentials introspect and nothing else', async () => {
    const grant = await tokenRequest(idp.url, {
      headers: { authorization: basicAuth(tools.clientId, tools.secret), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'tools:read', resource: TOOLS }).toString(),
    });
    expect(grant.status, grant.text).to.be.oneOf([400, 401]);
    expect(grant.body.error).to.be.oneOf(['unauthorized_client', 'invalid_client']);
    const browser = new Browser(idp.url);
    const query = new URLSearchParams({ client_id: tools.clientId, redirect_uri: CALLBACK, state: 's4', scope: 'tools:read', response_type: 'code' });
    const page = await browser.follow(`/login/oauth/authorize?${query}`, CALLBACK);
    expect(page.status).to.be.within(400, 499);
    // A wrong secret is the usual invalid_client.
    const wrong = await call(idp, '/login/oauth/introspect', {
      method: 'POST',
      headers: { authorization: basicAuth(tools.clientId, 'hs_wrong'), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: 'ho_x' }).toString(),
    });
    expect(wrong.status).to.equal(401);
    expect(wrong.body.error).to.equal('invalid_client');
  });

  it('publishes each resource\'s protected resource metadata (RFC 9728) by its identifier', async () => {
    const res = await call(idp, `/login/oauth/resource-metadata?${new URLSearchParams({ resource: TOOLS })}`);
    expect(res.status).to.equal(200);
    expect(res.headers.get('access-control-allow-origin')).to.equal('*');
    expect(res.body).to.deep.equal({
      resource: TOOLS,
      authorization_servers: [idp.url],
      scopes_supported: ['tools:read', 'tools:write'],
      bearer_methods_supported: ['header'],
      resource_name: 'Build tools',
    });
    // Written without its trailing slash, as a server may.
    expect((await call(idp, `/login/oauth/resource-metadata?resource=${encodeURIComponent('https://files.example.com')}`)).body.resource).to.equal(FILES);
    expect((await call(idp, `/login/oauth/resource-metadata?resource=${encodeURIComponent('https://nope.example.com/')}`)).status).to.equal(404);
    // Longer than any identifier: not looked up, the same 404.
    expect((await call(idp, `/login/oauth/resource-metadata?resource=${encodeURIComponent(`https://tools.example.com/${'a'.repeat(5000)}`)}`)).status).to.equal(404);
    const missing = await call(idp, '/login/oauth/resource-metadata');
    expect(missing.status).to.equal(400);
    expect(missing.body.error).to.equal('invalid_request');
    expect((await call(idp, `/login/oauth/resource-metadata?resource=${encodeURIComponent(TOOLS)}`, { method: 'POST' })).status).to.equal(405);
  });

  it('a deleted resource can no longer be asked for, and its server can no longer introspect', async () => {
    const owner = await makeUser(idp.db);
    const group = await makeGroup(idp.db, owner.id);
    const access = await groupAccess(idp.db, owner.id, group.id);
    const gone = 'https://gone.example.com/api';
    const made = await createResource({ db: idp.db, issuer: idp.url }, access, { identifier: gone, name: 'Gone', scopes: [{ name: 'gone', description: 'Soon gone' }] });
    const tokens = await tokensFor(gone, 'gone');
    expect(await introspect({ clientId: made.resource.clientId, secret: made.secret }, tokens.access_token)).to.include({ active: true });
    await deleteResource(idp.db, access, made.resource.id);
    const res = await call(idp, '/login/oauth/introspect', {
      method: 'POST',
      headers: { authorization: basicAuth(made.resource.clientId, made.secret), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: tokens.access_token }).toString(),
    });
    expect(res.status).to.equal(401);
    const refreshed = await tokenRequest(idp.url, {
      headers: { authorization: basicAuth(app.clientId, app.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token!, resource: gone }).toString(),
    });
    expect(refreshed.status).to.equal(400);
    expect(refreshed.body.error).to.equal('invalid_target');
  });
});
