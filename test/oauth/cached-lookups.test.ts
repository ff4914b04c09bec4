import { expect } from 'chai';
import { markUserDisabled } from '../../src/db/admin.js';
import { enableUser } from '../../src/services/admin.js';
import { changing } from '../../src/services/change-versions.js';
import { now } from '../../src/time.js';
import { call } from '../helpers/api.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { Browser, signIn } from '../helpers/browser.js';
import { makeClient, personalToken } from '../helpers/factories.js';
import { setEmailVerified } from '../helpers/email-verification.js';
import { authorize, authorizeUrl, oauthTokens, tokenRequest } from '../helpers/oauth.js';
import { linkIn, useMailServer } from '../helpers/smtp.js';

const ADMIN = { userId: 0, ip: null, admin: true };

/**
 * With Redis, clients, accounts and the application a flow's pages show are cached per instance
 * (src/services/change-versions.ts): each test first makes the instance read what it then
 * changes, and checks the very next request sees the change. (Revocations across two instances: test/interop/two-instances.test.ts.)
 */
describeEachProfile('what the provider has read is fresh after a change', (profile) => {
  const smtp = useMailServer();
  const idp = useIdp(profile, () => ({ SMTP_URL: smtp.url }));
  const pathOf = (link: URL) => `${link.pathname}${link.search}`;

  it("uses an application's new callback URL at the very next authorization", async () => {
    const client = await makeClient(idp.db);
    await oauthTokens(idp.url, client, client.user);
    const manage = await personalToken(idp.db, client.user.id, { scopes: ['groups:read-write'] });
    const moved = 'http://127.0.0.1:9/moved/callback';
    const patched = await call(idp, `/apis/v2/oauth-apps/${client.clientId}`, { token: manage, method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ callbackURL: moved }) });
    expect(patched.status, patched.text).to.equal(200);
    const back = await authorize(new Browser(idp.url), { ...client, redirectUri: moved }, client.user);
    expect(`${back.origin}${back.pathname}`).to.equal(moved);
    expect(back.searchParams.get('code')).to.be.a('string');
  });

  it("names a group's new name on the flow's sign-in page at once", async () => {
    const client = await makeClient(idp.db);
    const signInPage = async () => (await new Browser(idp.url).follow(authorizeUrl(idp.url, client)).expect(200)).text;
    expect(await signInPage()).to.include(`an application of the group <strong>${client.group.name}</strong>`);
    const manage = await personalToken(idp.db, client.user.id, { scopes: ['groups:read-write'] });
    const renamed = await call(idp, `/apis/v2/groups/${client.group.id}`, { token: manage, method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Renamed Group' }) });
    expect(renamed.status, renamed.text).to.equal(200);
    expect(await signInPage()).to.include('an application of the group <strong>Renamed Group</strong>');
  });

  it("shows an account's new name and address at userinfo at once", async () => {
    const client = await makeClient(idp.db);
    await setEmailVerified(idp.db, client.user, true);
    const { accessToken } = await oauthTokens(idp.url, client, client.user, 'openid profile email');
    const userinfo = () => call(idp, '/login/oauth/userinfo', { token: accessToken });
    expect((await userinfo()).body).to.include({ email: client.user.email, email_verified: true }).and.not.include({ name: 'Renamed Person' });
    const settings = await signIn(idp.url, client.user);
    await settings.submit('/account/settings/profile', { name: 'Renamed Person', email: 'renamed@example.test', current_password: client.user.password }).expect(302);
    expect((await userinfo()).body).to.include({ name: 'Renamed Person', email: client.user.email, email_verified: true });
    // The new address is the account's once its mailed link is followed.
    await settings.get(pathOf(linkIn(await smtp.next('renamed@example.test'), idp.url))).expect(302);
    expect((await userinfo()).body).to.include({ name: 'Renamed Person', email: 'renamed@example.test', email_verified: true });
  });

  it('lets an account enabled again through the authorization flow at once, after it was refused while disabled', async () => {
    const client = await makeClient(idp.db);
    const flow = { clientId: client.clientId, redirectUri: client.redirectUri, scope: 'openid' };
    const { browser } = await oauthTokens(idp.url, client, client.user, 'openid');
    const code = (await authorize(browser, flow)).searchParams.get('code')!;
    // Only the mark, as disabling makes it (its revoking aside), so that the refusal below comes
    // from reading the account: the instance now holds "no such account".
    await changing(idp.db, [`user:${client.user.id}`], () => markUserDisabled(idp.db, client.user.id, now()));
    const exchange = (c: string) => tokenRequest(idp.url, { query: { client_id: client.clientId, client_secret: client.clientSecret, code: c, redirect_uri: client.redirectUri } });
    expect((await exchange(code)).body.error).to.equal('invalid_grant');
    await enableUser(idp.db, ADMIN, client.user);
    const again = await authorize(new Browser(idp.url), flow, client.user);
    const res = await exchange(again.searchParams.get('code')!);
    expect(res.status, res.text).to.equal(200);
  });
});
