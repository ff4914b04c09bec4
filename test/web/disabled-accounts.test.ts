import { expect } from 'chai';
import { markUserDisabled, markUserEnabled } from '../../src/db/admin.js';
import { changing } from '../../src/services/change-versions.js';
import { now } from '../../src/time.js';
import { call, expectInvalidToken } from '../helpers/api.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { Browser, signIn, visit } from '../helpers/browser.js';
import { makeClient, makeUser, personalToken, type Client } from '../helpers/factories.js';
import { errorMessage, fieldError, formAction } from '../helpers/html.js';
import { authorizeUrl, oauthTokens, refresh, tokenRequest } from '../helpers/oauth.js';

const DISABLED = 'This account is disabled. Contact the site administrator.';
const WRONG = 'Incorrect username, email or password.';

/**
 * The second line of defence: an account marked disabled (here straight in the database, with
 * none of what disabling revokes revoked) is refused wherever a user is loaded.
 */
describeEachProfile('disabled accounts are refused everywhere', (profile) => {
  const idp = useIdp(profile);
  let client: Client;
  before(async () => {
    client = await makeClient(idp.db);
  });

  const db = () => idp.db;
  // Only the mark, none of the revoking that disableUser does after it: each check below must
  // refuse the account by the mark alone. The mark is made as the service makes it, with the
  // account's version replaced, so the caches kept with Redis see it as they would in production.
  const disable = (id: number) => changing(db(), [`user:${id}`], () => markUserDisabled(db(), id, now()));

  it('signs the site session out: pages treat the browser as a visitor', async () => {
    const user = await makeUser(db());
    const site = await signIn(idp.url, user);
    await disable(user.id);
    await site.get('/groups').expect(302, '/login?return_to=%2Fgroups');
  });

  it('refuses sign-in with the message only after the right password', async () => {
    const user = await makeUser(db());
    await disable(user.id);
    const page = await visit(idp.url);
    const right = await page.submit('/login', { login: user.username, password: user.password }).expect(403);
    expect(fieldError(right.text, 'login')).to.equal(DISABLED);
    expect(right.headers.getSetCookie().join('\n')).not.to.match(/_session=/);
    const wrong = await page.submit('/login', { login: user.username, password: `${user.password}x` }).expect(401);
    expect(fieldError(wrong.text, 'login')).to.equal(WRONG);
    expect(wrong.text).not.to.contain('disabled');
  });

  it('refuses the authorization flow’s sign-in the same way', async () => {
    const user = await makeUser(db());
    await disable(user.id);
    const browser = new Browser(idp.url);
    const page = await browser.follow(authorizeUrl(idp.url, { clientId: client.clientId, redirectUri: client.redirectUri, scope: 'openid' }));
    const res = await browser.submit(formAction(page.text, '/login'), { login: user.email, password: user.password }).expect(403);
    expect(fieldError(res.text, 'login')).to.equal(DISABLED);
  });

  it('refuses the authorization flow to a session signed in before the account was disabled', async () => {
    const user = await makeUser(db());
    const { browser } = await oauthTokens(idp.url, client, user, 'openid');
    await disable(user.id);
    const flow = { clientId: client.clientId, redirectUri: client.redirectUri, scope: 'openid' };
    // The session no longer counts: the flow asks for a sign-in instead of issuing a code…
    const res = await browser.follow(authorizeUrl(idp.url, flow));
    expect(res.status).to.equal(200);
    expect(res.url.pathname).to.match(/^\/interaction\//);
    expect(res.text).to.contain('name="password"');
    // …and a silent request is told to sign in.
    const silent = await browser.follow(authorizeUrl(idp.url, { ...flow, extra: { prompt: 'none' } }));
    const back = new URL(silent.headers.get('location')!);
    expect(back.origin + back.pathname).to.equal(client.redirectUri);
    expect(back.searchParams.get('error')).to.equal('login_required');
    expect(back.searchParams.get('code')).to.equal(null);
  });

  it('refuses its personal access tokens and OAuth tokens with 401 invalid_token, and its refresh tokens', async () => {
    const user = await makeUser(db());
    const pat = await personalToken(idp.db, user.id);
    const { accessToken, refreshToken } = await oauthTokens(idp.url, client, user, 'openid groups:read-only');
    expect((await call(idp, '/apis/v2/user', { token: pat })).status).to.equal(200);
    expect((await call(idp, '/apis/v2/user', { token: accessToken })).status).to.equal(200);
    await disable(user.id);
    expectInvalidToken(idp, await call(idp, '/apis/v2/user', { token: pat }));
    expectInvalidToken(idp, await call(idp, '/apis/v2/user', { token: accessToken }));
    const refreshed = await refresh(idp.url, client, refreshToken);
    expect(refreshed.status).to.equal(400);
    expect(refreshed.body.error).to.equal('invalid_grant');
    const userinfo = await fetch(`${idp.url}/login/oauth/userinfo`, { headers: { authorization: `Bearer ${accessToken}` } });
    expect(userinfo.status).to.equal(401);
  });

  it('refuses an authorization code issued before the account was disabled', async () => {
    const user = await makeUser(db());
    const { browser } = await oauthTokens(idp.url, client, user, 'openid');
    // Consent is remembered: the flow goes straight back with a code.
    const res = await browser.follow(authorizeUrl(idp.url, { clientId: client.clientId, redirectUri: client.redirectUri, scope: 'openid' }));
    const code = new URL(res.headers.get('location')!).searchParams.get('code');
    expect(code).to.be.a('string');
    await disable(user.id);
    const exchanged = await tokenRequest(idp.url, { query: { client_id: client.clientId, client_secret: client.clientSecret, code: code!, redirect_uri: client.redirectUri } });
    expect(exchanged.status).to.equal(400);
    expect(exchanged.body.error).to.equal('invalid_grant');
  });

  it('lets an enabled account sign in again', async () => {
    const user = await makeUser(db());
    await disable(user.id);
    await markUserEnabled(db(), user.id);
    const site = await signIn(idp.url, user);
    await site.get('/groups').expect(200);
    expect(errorMessage((await site.get('/groups')).text)).to.equal(undefined);
  });
});
