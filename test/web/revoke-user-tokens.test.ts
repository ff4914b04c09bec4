import { expect } from 'chai';
import { addMember } from '../../src/services/groups.js';
import { call, expectApiError, expectInvalidToken } from '../helpers/api.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { signIn } from '../helpers/browser.js';
import { groupAccess, makeApp, makeGroup, makeUser, personalToken } from '../helpers/factories.js';
import { oauthTokens, refresh } from '../helpers/oauth.js';

/**
 * Revoke all user tokens (as on GitHub): every user's grant of an application ends, with its
 * access and refresh tokens; the application and its secrets stay.
 */
describeEachProfile('Revoke all user tokens of an application', (profile) => {
  const idp = useIdp(profile);

  /** An application two users have authorized, each holding tokens. */
  async function appWithTwoUsers() {
    const owner = await makeUser(idp.db);
    const group = await makeGroup(idp.db, owner.id);
    const app = await makeApp(idp.db, owner.id, group.id);
    const client = { clientId: app.clientId, clientSecret: app.clientSecret, redirectUri: app.app.callback_url };
    const holders = [];
    for (let i = 0; i < 2; i += 1) holders.push(await oauthTokens(idp.url, client, await makeUser(idp.db)));
    const page = `/groups/${group.path}/settings/developer/apps/${app.clientId}`;
    return { owner, group, app, client, holders, page };
  }

  async function expectEnded(client: Parameters<typeof refresh>[1], holders: Array<{ accessToken: string; refreshToken: string }>) {
    for (const { accessToken, refreshToken } of holders) {
      expectInvalidToken(idp, await call(idp, '/apis/v2/user', { token: accessToken }));
      const refreshed = await refresh(idp.url, client, refreshToken);
      expect(refreshed.status, refreshed.text).to.equal(400);
      expect(refreshed.body.error).to.equal('invalid_grant');
    }
  }

  it('the application page counts the users, asks, then ends every grant; the secret still works', async () => {
    const { owner, app, client, holders, page } = await appWithTwoUsers();
    const browser = await signIn(idp.url, owner);
    const before = await browser.get(page).expect(200);
    expect(/data-testid="authorized-users">([^<]*)</.exec(before.text)?.[1]).to.equal('2 users');

    const confirm = await browser.get(`${page}/revoke-tokens`).expect(200);
    expect(confirm.text).to.match(/<strong>2<\/strong> users have authorized/);
    await browser.submit(`${page}/revoke-tokens`).expect(302, `${page}?notice=tokens-revoked`);

    await expectEnded(client, holders);
    expect(await idp.db('user_grants').where({ client_id: app.clientId })).to.have.length(0);
    const after = await browser.get(`${page}?notice=tokens-revoked`).expect(200);
    expect(/data-testid="authorized-users">([^<]*)</.exec(after.text)?.[1]).to.equal('0 users');
    expect(await idp.db('oauth_app_secrets').where({ app_id: app.app.id })).to.have.length(1);

    // The secret stays: a user who authorizes again gets working tokens.
    const again = await oauthTokens(idp.url, client, await makeUser(idp.db));
    expect((await call(idp, '/apis/v2/user', { token: again.accessToken })).status).to.equal(200);
    const event = await idp.db('audit_events').where({ action: 'app.tokens.revoke', target: app.clientId }).first();
    expect(JSON.parse(event.details)).to.deep.equal({ grants: 2 });
  });

  it('the API: authorizedUsers on the application, DELETE /oauth-apps/:id/grants for owners only', async () => {
    const { owner, group, app, client, holders } = await appWithTwoUsers();
    const token = await personalToken(idp.db, owner.id, { scopes: ['groups:read-write'] });
    const read = await call(idp, `/apis/v2/oauth-apps/${app.clientId}`, { token });
    expect(read.body.data.authorizedUsers).to.equal(2);

    const member = await makeUser(idp.db);
    await addMember(idp.db, await groupAccess(idp.db, owner.id, group.id), { user: member.username, role: 'maintainer' });
    const memberToken = await personalToken(idp.db, member.id, { scopes: ['groups:read-write'] });
    expectApiError(await call(idp, `/apis/v2/oauth-apps/${app.clientId}/grants`, { token: memberToken, method: 'DELETE' }), 403, 'forbidden');
    expect((await call(idp, '/apis/v2/user', { token: holders[0]!.accessToken })).status).to.equal(200);

    const revoked = await call(idp, `/apis/v2/oauth-apps/${app.clientId}/grants`, { token, method: 'DELETE' });
    expect(revoked.status, revoked.text).to.equal(204);
    await expectEnded(client, holders);
    expect((await call(idp, `/apis/v2/oauth-apps/${app.clientId}`, { token })).body.data.authorizedUsers).to.equal(0);
  });
});
