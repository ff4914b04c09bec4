import { expect } from 'chai';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { signIn, type Browser } from '../helpers/browser.js';
import { makeClient, type Client } from '../helpers/factories.js';
import { authorize, tokenRequest } from '../helpers/oauth.js';

function payloadOf(idToken: unknown): Record<string, unknown> {
  expect(idToken).to.be.a('string');
  const [, payload] = String(idToken).split('.');
  return JSON.parse(Buffer.from(payload!, 'base64url').toString('utf8')) as Record<string, unknown>;
}

/** The ID token carries the claims its scopes allow, as userinfo does; a client needs no userinfo call. */
describeEachProfile('claims in the ID token', (profile) => {
  const server = useIdp(profile);
  let fx: Client;
  let browser: Browser;

  before(async () => {
    fx = await makeClient(server.db);
    browser = await signIn(server.url, fx.user);
  });

  async function tokensFor(scope: string): Promise<{ client: Client; body: Record<string, unknown> }> {
    const client = await makeClient(server.db, { user: fx.user, name: 'Other App' });
    const params = (await authorize(browser, { ...client, scope, extra: { nonce: 'n-42' } }, fx.user)).searchParams;
    const res = await tokenRequest(server.url, {
      form: { client_id: client.clientId, client_secret: client.clientSecret, code: params.get('code')!, redirect_uri: client.redirectUri },
    });
    expect(res.status, res.text).to.equal(200);
    return { client, body: res.body };
  }

  it('puts name, preferred_username, email and email_verified in the ID token for openid profile email', async () => {
    const { body } = await tokensFor('openid profile email');
    const claims = payloadOf(body.id_token);
    expect(claims).to.include({
      sub: String(fx.user.id),
      name: fx.user.name,
      preferred_username: fx.user.username,
      email: fx.user.email,
      email_verified: true,
      nonce: 'n-42',
    });
  });

  it('leaves the e-mail out of the ID token when only profile was granted', async () => {
    const { body } = await tokensFor('openid profile');
    const claims = payloadOf(body.id_token);
    expect(claims).to.include({ name: fx.user.name, preferred_username: fx.user.username });
    expect(claims).to.not.have.any.keys('email', 'email_verified');
  });

  it('puts no profile or e-mail claim in the ID token for openid alone', async () => {
    const { body } = await tokensFor('openid');
    expect(payloadOf(body.id_token)).to.not.have.any.keys('name', 'preferred_username', 'email', 'email_verified');
  });

  it('keeps the claims in the ID token of a refresh', async () => {
    const { client, body } = await tokensFor('openid profile email');
    const refreshed = await tokenRequest(server.url, {
      form: { grant_type: 'refresh_token', refresh_token: String(body.refresh_token), client_id: client.clientId, client_secret: client.clientSecret },
    });
    expect(refreshed.status, refreshed.text).to.equal(200);
    expect(payloadOf(refreshed.body.id_token)).to.include({ name: fx.user.name, email: fx.user.email });
  });
});
