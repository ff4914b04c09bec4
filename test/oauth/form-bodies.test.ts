import { expect } from 'chai';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { Browser } from '../helpers/browser.js';
import { makeClient, type Client } from '../helpers/factories.js';
import { authorize, basicAuth, tokenRequest } from '../helpers/oauth.js';

/**
 * The provider's form bodies are read once by the service (its checks) and given to the library to
 * read again: the library must never find an already-parsed body, which it reports as an upstream
 * parser misconfiguration on the console.
 */
describeEachProfile('The provider reads its form bodies itself', (profile) => {
  const idp = useIdp(profile);
  let client: Client;
  const warnings: string[] = [];
  let realWarn: typeof console.warn;

  before(async () => {
    client = await makeClient(idp.db);
    realWarn = console.warn;
    console.warn = (...args: unknown[]) => {
      warnings.push(args.map(String).join(' '));
      realWarn(...args);
    };
  });
  after(() => {
    console.warn = realWarn;
  });

  it('exchanges codes (form, query string, both) and refreshes with no "already parsed request body" warning', async () => {
    const browser = new Browser(idp.url);
    const code = async () => (await authorize(browser, { ...client, scope: 'groups:read-only' }, client.user)).searchParams.get('code')!;
    const inForm = await tokenRequest(idp.url, { form: { grant_type: 'authorization_code', code: await code(), redirect_uri: client.redirectUri }, authorization: basicAuth(client.clientId, client.clientSecret) });
    expect(inForm.status, inForm.text).to.equal(200);
    const inQuery = await tokenRequest(idp.url, { query: { client_id: client.clientId, client_secret: client.clientSecret, code: await code(), redirect_uri: client.redirectUri } });
    expect(inQuery.status, inQuery.text).to.equal(200);
    const both = await tokenRequest(idp.url, { query: { code: await code(), redirect_uri: client.redirectUri }, form: { client_id: client.clientId, client_secret: client.clientSecret } });
    expect(both.status, both.text).to.equal(200);
    const refreshed = await tokenRequest(idp.url, { form: { grant_type: 'refresh_token', refresh_token: String(both.body.refresh_token) }, authorization: basicAuth(client.clientId, client.clientSecret) });
    expect(refreshed.status, refreshed.text).to.equal(200);
    expect(warnings.filter((w) => w.includes('already parsed'))).to.deep.equal([]);
  });
});
