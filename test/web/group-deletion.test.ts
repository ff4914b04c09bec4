import { expect } from 'chai';
import { addMember } from '../../src/services/groups.js';
import { call, expectApiError, expectInvalidToken } from '../helpers/api.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { signIn } from '../helpers/browser.js';
import { idp as runCli, json } from '../helpers/cli.js';
import { groupAccess, makeApp, makeGroup, makeUser, personalToken } from '../helpers/factories.js';
import { fieldError } from '../helpers/html.js';
import { oauthTokens, refresh } from '../helpers/oauth.js';

/**
 * Deleting a group (owners only): a confirmation page naming what goes, the path typed to
 * confirm; the group's applications go and every token they issued stops working.
 */
describeEachProfile('Deleting a group', (profile) => {
  const idp = useIdp(profile);
  const groupRow = (id: number) => idp.db('groups').where({ id }).first();

  /** An owner's group with a member, two applications, and a user holding tokens of one of them. */
  async function groupWithTokens() {
    const owner = await makeUser(idp.db);
    const group = await makeGroup(idp.db, owner.id);
    const member = await makeUser(idp.db);
    await addMember(idp.db, await groupAccess(idp.db, owner.id, group.id), { user: member.username, role: 'maintainer' });
    const app = await makeApp(idp.db, owner.id, group.id);
    await makeApp(idp.db, owner.id, group.id, { name: 'Second app' });
    const client = { clientId: app.clientId, clientSecret: app.clientSecret, redirectUri: app.app.callback_url };
    const person = await makeUser(idp.db);
    const tokens = await oauthTokens(idp.url, client, person);
    expect((await call(idp, '/apis/v2/user', { token: tokens.accessToken })).status).to.equal(200);
    return { owner, group, member, client, person, tokens };
  }

  async function expectTokensDead(client: Parameters<typeof refresh>[1], tokens: { accessToken: string; refreshToken: string }) {
    expectInvalidToken(idp, await call(idp, '/apis/v2/user', { token: tokens.accessToken }));
    const refreshed = await refresh(idp.url, client, tokens.refreshToken);
    expect(refreshed.status, refreshed.text).to.be.oneOf([400, 401]);
    expect(refreshed.body.error).to.be.oneOf(['invalid_grant', 'invalid_client']);
    // Gone from the token storage itself (SQL or Redis), not only refused for want of an application.
    const { provider } = idp.idp;
    expect(await provider.AccessToken.find(tokens.accessToken), 'access token in storage').to.equal(undefined);
    expect(await provider.RefreshToken.find(tokens.refreshToken), 'refresh token in storage').to.equal(undefined);
  }

  it('asks on a page naming what goes, wants the path typed, then ends the applications\' tokens', async () => {
    const { owner, group, client, tokens } = await groupWithTokens();
    const browser = await signIn(idp.url, owner);
    const settings = await browser.get(`/groups/${group.path}/settings`).expect(200);
    expect(settings.text).to.include(`action="/groups/${group.path}/settings/delete"`);

    const confirm = await browser.get(`/groups/${group.path}/settings/delete`).expect(200);
    const summary = /data-testid="deletion-summary">([\s\S]*?)<\/ul>/.exec(confirm.text)![1]!.replace(/<[^>]+>/g, '');
    expect(summary).to.match(/2\s+memberships/).and.match(/2\s+OAuth applications/);

    const wrong = await browser.submit(`/groups/${group.path}/settings/delete`, { confirm: 'not-the-path' }).expect(400);
    expect(fieldError(wrong.text, 'confirm')).to.include(group.path);
    expect(await groupRow(group.id)).to.not.equal(undefined);

    await browser.submit(`/groups/${group.path}/settings/delete`, { confirm: group.path.toUpperCase() }).expect(302, '/groups?notice=deleted');
    expect((await browser.get('/groups?notice=deleted').expect(200)).text).to.include('Group deleted.');
    expect(await groupRow(group.id)).to.equal(undefined);
    expect(await idp.db('oauth_apps').where({ group_id: group.id })).to.have.length(0);
    await expectTokensDead(client, tokens);

    const audit = await idp.db('audit_events').whereNull('group_id').where({ action: 'group.delete', target: group.path }).first();
    expect(audit, 'a site audit event').to.not.equal(undefined);
    expect(JSON.parse(audit.details)).to.include({ applications: 2, members: 2 });
    expect(audit.actor_id).to.equal(owner.id);
  });

  it('is for owners only', async () => {
    const { group, member } = await groupWithTokens();
    const browser = await signIn(idp.url, member);
    await browser.get(`/groups/${group.path}/settings/delete`).expect(403);
    await browser.submit(`/groups/${group.path}/settings/delete`, { confirm: group.path }).expect(403);
    expect(await groupRow(group.id)).to.not.equal(undefined);
  });

  it('DELETE /apis/v2/groups/:id: owners with groups:read-write only, then the tokens end', async () => {
    const { owner, group, member, client, tokens } = await groupWithTokens();
    const del = (token: string) => call(idp, `/apis/v2/groups/${group.id}`, { token, method: 'DELETE' });

    expectApiError(await del(await personalToken(idp.db, member.id, { scopes: ['groups:read-write'] })), 403, 'forbidden');
    expectApiError(await del(await personalToken(idp.db, owner.id, { scopes: ['groups:read-only'] })), 403, 'insufficient_scope');
    const stranger = await makeUser(idp.db);
    expectApiError(await del(await personalToken(idp.db, stranger.id, { scopes: ['groups:read-write'] })), 404, 'not_found');
    expect(await groupRow(group.id)).to.not.equal(undefined);

    const ownerToken = await personalToken(idp.db, owner.id, { scopes: ['groups:read-write'] });
    const gone = await del(ownerToken);
    expect(gone.status, gone.text).to.equal(204);
    expect(await groupRow(group.id)).to.equal(undefined);
    await expectTokensDead(client, tokens);
    expectApiError(await del(ownerToken), 404, 'not_found');
  });

  it('sixteen deletions at once: one succeeds, the rest find no group', async () => {
    const { owner, group } = await groupWithTokens();
    const token = await personalToken(idp.db, owner.id, { scopes: ['groups:read-write'] });
    const answers = await Promise.all(Array.from({ length: 16 }, () => call(idp, `/apis/v2/groups/${group.id}`, { token, method: 'DELETE' })));
    expect(answers.filter((a) => a.status === 204)).to.have.length(1);
    expect(answers.filter((a) => a.status === 404)).to.have.length(15);
    expect(await idp.db('audit_events').where({ action: 'group.delete', target: group.path })).to.have.length(1);
  });

  it('idp group delete --group P (the CLI) does the same', async function () {
    if (profile !== 'sqlite') this.skip(); // the CLI's storage is the service's own; the SQLite profile shows it
    const { group, client, tokens } = await groupWithTokens();
    const run = await runCli(idp.database.url, ['group', 'delete', '--group', group.path, '--json'], '', { ISSUER: idp.url });
    // oidc-provider, which this command loads, warns on a Node.js release older than the LTS it supports.
    const out = json({ ...run, stderr: run.stderr.replace(/^oidc-provider WARNING: Unsupported runtime\.[^\n]*\n/, '') });
    expect(out).to.deep.include({ path: group.path, applications: 2, members: 2 });
    await expectTokensDead(client, tokens);
  });
});
