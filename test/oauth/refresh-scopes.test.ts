import { expect } from 'chai';
import type { ApiResponse } from '../helpers/api.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { signIn, type Browser } from '../helpers/browser.js';
import { makeClient, type Client } from '../helpers/factories.js';
import { authorize, tokenRequest } from '../helpers/oauth.js';

/**
 * A refresh request's `scope` means what authorize's does: unknown scopes (offline_access among
 * them) are dropped, a known scope beyond the grant is refused. oidc-agent sends its configured
 * scope, offline_access included, on every refresh.
 */
describeEachProfile('the scope of a refresh request', (profile) => {
  const server = useIdp(profile);
  let fx: Client;
  let browser: Browser;

  before(async () => {
    fx = await makeClient(server.db);
    browser = await signIn(server.url, fx.user);
  });

  /** A first token set for an application of its own with `scope` requested at authorize. */
  async function grantWith(scope: string): Promise<{ client: Client; refreshToken: string; scope: string }> {
    const client = await makeClient(server.db, { user: fx.user, name: 'Other App' });
    const params = (await authorize(browser, { ...client, scope, ...(scope.includes('openid') ? { extra: { nonce: 'n-1' } } : {}) }, fx.user)).searchParams;
    const res = await tokenRequest(server.url, {
      form: { client_id: client.clientId, client_secret: client.clientSecret, code: params.get('code')!, redirect_uri: client.redirectUri },
    });
    expect(res.status, res.text).to.equal(200);
    return { client, refreshToken: String(res.body.refresh_token), scope: String(res.body.scope) };
  }

  function refresh(client: Client, refreshToken: string, scope: string): Promise<ApiResponse> {
    return tokenRequest(server.url, {
      form: { grant_type: 'refresh_token', refresh_token: refreshToken, scope, client_id: client.clientId, client_secret: client.clientSecret },
    });
  }

  it('refreshes with the scope a client configured, offline_access included, and grants what authorize granted', async () => {
    const configured = 'openid groups:read-only offline_access';
    const first = await grantWith(configured);
    expect(first.scope.split(' ')).to.have.members(['openid', 'groups:read-only']);
    const res = await refresh(first.client, first.refreshToken, configured);
    expect(res.status, res.text).to.equal(200);
    expect(String(res.body.scope).split(' ')).to.have.members(['openid', 'groups:read-only']);
  });

  it('refreshes with only offline_access and keeps the refresh token\'s scopes', async () => {
    const first = await grantWith('groups:read-only');
    const res = await refresh(first.client, first.refreshToken, 'offline_access');
    expect(res.status, res.text).to.equal(200);
    expect(res.body.scope).to.equal('groups:read-only');
  });

  it('drops an unknown scope on refresh as authorize does', async () => {
    const first = await grantWith('groups:read-only frobnicate');
    const res = await refresh(first.client, first.refreshToken, 'groups:read-only frobnicate');
    expect(res.status, res.text).to.equal(200);
    expect(res.body.scope).to.equal('groups:read-only');
  });

  it('narrows to a known scope of the grant', async () => {
    const first = await grantWith('openid groups:read-only');
    const res = await refresh(first.client, first.refreshToken, 'groups:read-only offline_access');
    expect(res.status, res.text).to.equal(200);
    expect(res.body.scope).to.equal('groups:read-only');
  });

  it('refuses a known scope beyond the grant with invalid_scope', async () => {
    const first = await grantWith('groups:read-only');
    const res = await refresh(first.client, first.refreshToken, 'groups:read-only groups:read-write offline_access');
    expect(res.status, res.text).to.equal(400);
    expect(res.body.error).to.equal('invalid_scope');
    expect(res.body.scope).to.equal('groups:read-write');
  });

  it('reads a refresh scope from the query string the same way', async () => {
    const first = await grantWith('groups:read-only');
    const res = await tokenRequest(server.url, {
      query: { grant_type: 'refresh_token', refresh_token: first.refreshToken, scope: 'groups:read-only offline_access', client_id: first.client.clientId, client_secret: first.client.clientSecret },
    });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.scope).to.equal('groups:read-only');
  });
});
