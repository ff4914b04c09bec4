import { expect } from 'chai';
import type { ApiResponse } from '../helpers/api.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { signIn, type Browser } from '../helpers/browser.js';
import { makeClient, type Client } from '../helpers/factories.js';
import { authorize, authorizeUrl, tokenRequest } from '../helpers/oauth.js';

/** Scopes at authorize may be separated by spaces (RFC 6749) or commas (as GitHub accepts). */
describeEachProfile('scope separators at authorize', (profile) => {
  const server = useIdp(profile);
  let fx: Client;
  let browser: Browser;

  before(async () => {
    fx = await makeClient(server.db);
    browser = await signIn(server.url, fx.user);
  });

  /** Authorizes a new application with `scope` as given and exchanges the code. */
  async function tokensFor(scope: string, extra: Record<string, string> = {}): Promise<ApiResponse> {
    const client = await makeClient(server.db, { user: fx.user, name: 'Other App' });
    const params = (await authorize(browser, { ...client, scope, extra }, fx.user)).searchParams;
    expect(params.get('error'), params.toString()).to.equal(null);
    const res = await tokenRequest(server.url, {
      form: { client_id: client.clientId, client_secret: client.clientSecret, code: params.get('code')!, redirect_uri: client.redirectUri },
    });
    expect(res.status, res.text).to.equal(200);
    return res;
  }

  it('grants comma-separated scopes, openid with its nonce and ID token included', async () => {
    const res = await tokensFor('groups:read-only,openid', { nonce: 'gh-style' });
    expect(String(res.body.scope).split(' ')).to.have.members(['groups:read-only', 'openid']);
    expect(res.body.id_token).to.be.a('string');
  });

  it('accepts commas and spaces mixed in one scope list', async () => {
    const res = await tokensFor('openid, profile email', { nonce: 'n' });
    expect(String(res.body.scope).split(' ')).to.have.members(['openid', 'profile', 'email']);
  });

  it('drops an unknown scope of a comma-separated list and grants the rest', async () => {
    const res = await tokensFor('groups:read-only,frobnicate');
    expect(res.body.scope).to.equal('groups:read-only');
  });

  it('grants groups:read-only for a scope of commas only, as for no scope', async () => {
    const res = await tokensFor(',');
    expect(res.body.scope).to.equal('groups:read-only');
  });

  it('names each comma-separated scope on its own line of the consent page', async () => {
    const client = await makeClient(server.db, { user: fx.user, name: 'Other App' });
    const res = await browser.follow(authorizeUrl(server.url, { clientId: client.clientId, redirectUri: client.redirectUri, scope: 'groups:read-only,groups:read-write' }));
    expect(res.status).to.equal(200);
    const html = res.text;
    expect(html).to.include('<span class="scope">groups:read-only</span>');
    expect(html).to.include('<span class="scope">groups:read-write</span>');
  });
});
