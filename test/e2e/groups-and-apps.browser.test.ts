import { expect } from 'chai';
import type { Page } from 'playwright-core';
import * as client from 'openid-client';
import { call, expectInvalidToken } from '../helpers/api.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { addMember } from '../../src/services/groups.js';
import { groupAccess, makeApp, makeGroup, makeUser, type TestUser } from '../helpers/factories.js';
import { oauthTokens, refresh } from '../helpers/oauth.js';
import { signInThroughPage, useChromium } from './support.js';

const CALLBACK = 'http://127.0.0.1:9999/chromium/callback';

/**
 * Public applications, deleting a group and Revoke all user tokens, done as a person does them:
 * in Chromium, by the pages' own buttons; the tokens checked afterwards over HTTP.
 */
describeEachProfile('Groups and applications in a real browser', function (profile) {
  this.timeout(60_000);

  const idp = useIdp(profile);
  const chromium = useChromium();

  async function signedIn(user: TestUser): Promise<Page> {
    const page = await chromium.newPage();
    await signInThroughPage(page, idp.url, user);
    return page;
  }

  /** An owner's group with a confidential application whose two users hold tokens. */
  async function appWithTokens() {
    const owner = await makeUser(idp.db);
    const group = await makeGroup(idp.db, owner.id);
    const app = await makeApp(idp.db, owner.id, group.id, { callbackURL: CALLBACK });
    const known = { clientId: app.clientId, clientSecret: app.clientSecret, redirectUri: CALLBACK };
    const holders = [await oauthTokens(idp.url, known, await makeUser(idp.db)), await oauthTokens(idp.url, known, await makeUser(idp.db))];
    return { owner, group, app, known, holders };
  }

  /** Each holder's access token is refused, and its refresh token too: invalid_grant, or invalid_client once the application is gone. */
  async function expectEnded(known: Parameters<typeof refresh>[1], holders: Array<{ accessToken: string; refreshToken: string }>, refusal = 'invalid_grant') {
    for (const { accessToken, refreshToken } of holders) {
      expectInvalidToken(idp, await call(idp, '/apis/v2/user', { token: accessToken }));
      expect((await refresh(idp.url, known, refreshToken)).body.error).to.equal(refusal);
    }
  }

  it('a Public application is made on the New application page and signs a person in with PKCE and no secret (openid-client)', async () => {
    const owner = await makeUser(idp.db);
    const group = await makeGroup(idp.db, owner.id);
    const page = await signedIn(owner);
    await page.goto(`${idp.url}/groups/${group.path}/settings/developer/apps/new`);
    await page.getByLabel('Application name').fill('Pocket app');
    await page.getByLabel('Homepage URL').fill('https://pocket.example.test');
    await page.getByLabel('Authorization callback URL').fill(CALLBACK);
    await page.getByLabel('Public', { exact: true }).check();
    await page.getByRole('button', { name: 'Create' }).click();
    await page.waitForURL(/notice=created/);
    expect(await page.getByTestId('public-client').isVisible()).to.equal(true);
    expect(await page.getByTestId('new-secret-box').count()).to.equal(0);
    const clientId = /apps\/([^/?]+)/.exec(page.url())![1]!;

    const config = await client.discovery(new URL(idp.url), clientId, undefined, client.None(), { execute: [client.allowInsecureRequests] });
    const verifier = client.randomPKCECodeVerifier();
    const url = client.buildAuthorizationUrl(config, { redirect_uri: CALLBACK, scope: 'groups:read-only', code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state: 'st' });
    let callback: URL | undefined;
    await page.route('http://127.0.0.1:9999/**', (route) => {
      callback = new URL(route.request().url());
      return route.fulfill({ status: 200, body: 'back at the app' });
    });
    await page.goto(url.href);
    await page.getByRole('button', { name: 'Authorize' }).click();
    await page.waitForURL(/127\.0\.0\.1:9999/);
    const tokens = await client.authorizationCodeGrant(config, callback!, { pkceCodeVerifier: verifier, expectedState: 'st' });
    expect(tokens.access_token).to.match(/^ho_/);
    expect((await call(idp, '/apis/v2/user', { token: tokens.access_token })).status).to.equal(200);
  });

  it('Delete group: the page names what goes, wants the path typed, and then the applications’ tokens stop working', async () => {
    const { owner, group, known, holders } = await appWithTokens();
    const page = await signedIn(owner);
    await page.goto(`${idp.url}/groups/${group.path}/settings`);
    await page.getByTestId('delete-group').click();
    expect(await page.getByTestId('deletion-summary').textContent()).to.match(/1\s+OAuth application/);
    await page.getByLabel(`Type ${group.path} to confirm`).fill('not-the-path');
    await page.getByRole('button', { name: 'Delete this group' }).click();
    expect(await idp.db('groups').where({ id: group.id }).first()).to.not.equal(undefined);
    await page.getByLabel(`Type ${group.path} to confirm`).fill(group.path);
    await page.getByRole('button', { name: 'Delete this group' }).click();
    await page.waitForURL(/\/groups\?notice=deleted/);
    expect(await idp.db('groups').where({ id: group.id }).first()).to.equal(undefined);
    await expectEnded(known, holders, 'invalid_client');
  });

  it('Leave group: asks first, then the member is gone; the last owner’s button is disabled with the reason', async () => {
    const owner = await makeUser(idp.db);
    const member = await makeUser(idp.db);
    const group = await makeGroup(idp.db, owner.id);
    await addMember(idp.db, await groupAccess(idp.db, owner.id, group.id), { user: member.username, role: 'member' });
    const page = await signedIn(member);
    await page.goto(`${idp.url}/groups/${group.path}`);
    page.once('dialog', (dialog) => void dialog.dismiss());
    await page.getByRole('button', { name: 'Leave group' }).click();
    expect(await idp.db('memberships').where({ group_id: group.id, user_id: member.id }).first()).to.not.equal(undefined);
    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: 'Leave group' }).click();
    await page.waitForURL(/\/groups\?notice=left/);
    expect(await idp.db('memberships').where({ group_id: group.id, user_id: member.id }).first()).to.equal(undefined);

    const ownerPage = await signedIn(owner);
    await ownerPage.goto(`${idp.url}/groups/${group.path}`);
    expect(await ownerPage.getByRole('button', { name: 'Leave group' }).isDisabled()).to.equal(true);
    expect(await ownerPage.getByTestId('leave-reason').textContent()).to.equal('You are the last owner of this group: make another member an owner first, or delete the group.');
  });

  it('Revoke all user tokens: asks, then every user’s grant ends; the application and its secret stay', async () => {
    const { owner, group, app, known, holders } = await appWithTokens();
    const page = await signedIn(owner);
    await page.goto(`${idp.url}/groups/${group.path}/settings/developer/apps/${app.clientId}`);
    expect(await page.getByTestId('authorized-users').textContent()).to.equal('2 users');
    await page.getByTestId('revoke-all-tokens').click();
    await page.getByRole('button', { name: 'Revoke all user tokens' }).click();
    await page.waitForURL(/notice=tokens-revoked/);
    expect(await page.getByTestId('authorized-users').textContent()).to.equal('0 users');
    await expectEnded(known, holders);
    const again = await oauthTokens(idp.url, known, await makeUser(idp.db));
    expect((await call(idp, '/apis/v2/user', { token: again.accessToken })).status).to.equal(200);
  });
});
