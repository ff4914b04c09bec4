import { expect } from 'chai';
import * as client from 'openid-client';
import type { GroupRow } from '../../src/db/groups.js';
import { translator, type Language } from '../../src/i18n.js';
import { generateClientSecret, revokeClientSecret, updateApplication } from '../../src/services/apps.js';
import { addMember } from '../../src/services/groups.js';
import { isWellFormedToken } from '../../src/tokens.js';
import { call, expectApiError, expectInvalidToken, type ApiResponse } from '../helpers/api.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { Browser, signIn } from '../helpers/browser.js';
import { appAccess, CALLBACK, groupAccess, makeApp, makeGroup, makeUser, personalToken, type TestUser } from '../helpers/factories.js';
import { fieldError, unescapeHtml } from '../helpers/html.js';

/**
 * Allow the application to act as itself: the client credentials grant (RFC 6749 §4.4), asked for
 * by openid-client's own clientCredentialsGrant, and what its token reaches in the API.
 */
describeEachProfile('Applications acting as themselves (client credentials)', (profile) => {
  const idp = useIdp(profile);

  function api(token: string, method: string, path: string, body?: unknown): Promise<ApiResponse> {
    return call(idp, `/apis/v2${path}`, {
      token,
      method,
      ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
    });
  }

  /** openid-client configured for an application, by discovery (plain http only because the server is on loopback). */
  const configFor = (clientId: string, clientSecret: string) =>
    client.discovery(new URL(idp.url), clientId, clientSecret, undefined, { execute: [client.allowInsecureRequests] });

  async function grant(clientId: string, clientSecret: string, scope?: string) {
    return client.clientCredentialsGrant(await configFor(clientId, clientSecret), scope === undefined ? {} : { scope });
  }

  /** The OAuth error of a refused grant, as openid-client reports it. */
  async function refusal(attempt: Promise<unknown>): Promise<string> {
    try {
      await attempt;
    } catch (err) {
      return String((err as { error?: string }).error ?? (err as Error).message);
    }
    throw new Error('the grant was not refused');
  }

  /** An owner, their group with one more member, and another group the application is not in. */
  async function setting(options: { clientCredentials?: boolean } = {}) {
    const owner = await makeUser(idp.db);
    const group = await makeGroup(idp.db, owner.id);
    const member = await makeUser(idp.db);
    await addMember(idp.db, await groupAccess(idp.db, owner.id, group.id), { user: member.username, role: 'member' });
    const stranger = await makeUser(idp.db);
    const other = await makeGroup(idp.db, stranger.id);
    const app = await makeApp(idp.db, owner.id, group.id, { name: 'Sync Bot', clientCredentials: options.clientCredentials ?? true });
    return { owner, group, member, other, app };
  }

  it('gives an opted-in application an ho_ token that lists only its own group and cannot read a user', async () => {
    const { group, other, app } = await setting();
    const tokens = await grant(app.clientId, app.clientSecret, 'groups:read-only');
    expect(isWellFormedToken(tokens.access_token, 'ho_')).to.equal(true);
    expect(tokens.token_type).to.equal('bearer');
    expect(tokens.scope).to.equal('groups:read-only');
    expect(tokens.refresh_token).to.equal(undefined);

    const list = await api(tokens.access_token, 'GET', '/groups');
    expect(list.status, list.text).to.equal(200);
    expect(list.body.data.items.map((g: { id: number }) => g.id)).to.deep.equal([group.id]);
    expect(list.body.data.items[0].role).to.equal('maintainer');

    expect((await api(tokens.access_token, 'GET', `/groups/${group.id}`)).status).to.equal(200);
    // Another group reads as one that does not exist; so does its members list or a write.
    expectApiError(await api(tokens.access_token, 'GET', `/groups/${other.id}`), 404, 'not_found');
    expectApiError(await api(tokens.access_token, 'GET', `/groups/${group.id + 100000}`), 404, 'not_found');

    const user = await api(tokens.access_token, 'GET', '/user');
    expectApiError(user, 403, 'no_user');
    expect(user.body.error_description).to.match(/application acting as itself/);

    // Read-only: no writes.
    expectApiError(await api(tokens.access_token, 'PATCH', `/groups/${group.id}`, { name: 'Renamed' }), 403, 'insufficient_scope');
  });

  it('takes no scope as groups:read-only, and refuses scopes about a person and the administrators\' scope', async () => {
    const { app } = await setting();
    expect((await grant(app.clientId, app.clientSecret)).scope).to.equal('groups:read-only');
    expect(await refusal(grant(app.clientId, app.clientSecret, 'openid groups:read-only'))).to.equal('invalid_scope');
    expect(await refusal(grant(app.clientId, app.clientSecret, 'email'))).to.equal('invalid_scope');
    expect(await refusal(grant(app.clientId, app.clientSecret, 'admin'))).to.equal('invalid_scope');
    expect(await refusal(grant(app.clientId, app.clientSecret, 'groups:read-write admin'))).to.equal('invalid_scope');
  });

  it('refuses an application that did not opt in with unauthorized_client', async () => {
    const { app } = await setting({ clientCredentials: false });
    expect(await refusal(grant(app.clientId, app.clientSecret, 'groups:read-only'))).to.equal('unauthorized_client');
  });

  it('audits a change made with groups:read-write in the application\'s name, on the group\'s Audit log page', async () => {
    const { owner, group, member, app } = await setting();
    const tokens = await grant(app.clientId, app.clientSecret, 'groups:read-write');
    expect(tokens.scope).to.equal('groups:read-write');
    // As a maintainer: removes a member, but not the group's settings, applications or the group.
    const removed = await api(tokens.access_token, 'DELETE', `/groups/${group.id}/members/${member.id}`);
    expect(removed.status, removed.text).to.equal(204);
    expectApiError(await api(tokens.access_token, 'PATCH', `/groups/${group.id}`, { name: 'Renamed' }), 403, 'forbidden');
    expectApiError(await api(tokens.access_token, 'DELETE', `/groups/${group.id}`), 403, 'forbidden');

    const row = await idp.db('audit_events').where({ group_id: group.id, action: 'member.remove' }).first();
    expect(row).to.deep.include({ actor_id: null, actor_client_id: app.clientId, target: member.username });

    // The group's audit events in the API name it too, and the application (a maintainer) reads them.
    const events = await api(tokens.access_token, 'GET', `/groups/${group.id}/audit-events?action=member.remove`);
    expect(events.status, events.text).to.equal(200);
    expect(events.body.data.items[0]).to.include({ actor: null, actorApplication: app.clientId, target: member.username });

    const browser = await signIn(idp.url, owner);
    const page = await browser.get(`/groups/${group.path}/settings/audit`).expect(200);
    const who = /<tr data-testid="audit-row">[\s\S]*?<td[^>]*>[\s\S]*?<\/td>\s*<td[^>]*>([^<]*)<\/td>/.exec(page.text)?.[1];
    expect(unescapeHtml(who ?? '')).to.equal('application Sync Bot');
  });

  it('stops the grant for a revoked secret; a rotated-in secret works', async () => {
    const { owner, app } = await setting();
    const access = await appAccess(idp.db, owner.id, app.clientId);
    const next = await generateClientSecret(idp.db, access);
    await revokeClientSecret(idp.db, access, app.secretId);
    expect(await refusal(grant(app.clientId, app.clientSecret))).to.equal('invalid_client');
    expect(isWellFormedToken((await grant(app.clientId, next.secret)).access_token, 'ho_')).to.equal(true);
  });

  it('ends a token reported as leaked, and says so in the group\'s log', async () => {
    const { group, app } = await setting();
    const tokens = await grant(app.clientId, app.clientSecret);
    const report = await call(idp, '/apis/v2/credentials/revoke', {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ credentials: [tokens.access_token] }),
    });
    expect(report.status, report.text).to.equal(202);
    expectInvalidToken(idp, await api(tokens.access_token, 'GET', `/groups/${group.id}`));
    const row = await idp.db('audit_events').where({ group_id: group.id, action: 'app.token.report.revoke' }).first();
    expect(JSON.parse(row.details)).to.deep.equal({ token: 'access token' });
  });

  it('ends the tokens it gave once the owners turn it off, and then refuses the grant', async () => {
    const { owner, group, app } = await setting();
    const tokens = await grant(app.clientId, app.clientSecret);
    expect((await api(tokens.access_token, 'GET', `/groups/${group.id}`)).status).to.equal(200);
    await updateApplication(idp.db, undefined, await appAccess(idp.db, owner.id, app.clientId), { clientCredentials: false });
    expectInvalidToken(idp, await api(tokens.access_token, 'GET', `/groups/${group.id}`));
    expect(await refusal(grant(app.clientId, app.clientSecret))).to.equal('unauthorized_client');
  });

  describe('the opt-in', () => {
    async function ownerWithToken(): Promise<{ owner: TestUser; group: GroupRow; token: string }> {
      const owner = await makeUser(idp.db);
      const group = await makeGroup(idp.db, owner.id);
      return { owner, group, token: await personalToken(idp.db, owner.id, { scopes: ['groups:read-write'] }) };
    }
    const fields = { name: 'Bot', homepageURL: 'https://bot.example.test', callbackURL: CALLBACK };

    it('is off by default, on and off through the API, and refused to a public application', async () => {
      const { group, token } = await ownerWithToken();
      const made = await api(token, 'POST', `/groups/${group.id}/oauth-apps`, fields);
      expect(made.status, made.text).to.equal(201);
      expect(made.body.data.clientCredentials).to.equal(false);
      const on = await api(token, 'PATCH', `/oauth-apps/${made.body.data.clientID}`, { clientCredentials: true });
      expect(on.status, on.text).to.equal(200);
      expect(on.body.data.clientCredentials).to.equal(true);
      expect((await grant(made.body.data.clientID, made.body.data.clientSecret)).access_token).to.match(/^ho_/);

      const publicApp = await api(token, 'POST', `/groups/${group.id}/oauth-apps`, { ...fields, type: 'public', clientCredentials: true });
      expectApiError(publicApp, 400, 'invalid_request');
      expect(publicApp.body.error_description).to.equal('clientCredentials cannot be on for a public application: it has no client secret to authenticate with');
      const pub = await api(token, 'POST', `/groups/${group.id}/oauth-apps`, { ...fields, type: 'public' });
      const edit = await api(token, 'PATCH', `/oauth-apps/${pub.body.data.clientID}`, { clientCredentials: true });
      expectApiError(edit, 400, 'invalid_request');
      expect(edit.body.error_description).to.match(/^clientCredentials cannot be on for a public application/);
      expectApiError(await api(token, 'PATCH', `/oauth-apps/${made.body.data.clientID}`, { clientCredentials: 'yes' }), 400, 'invalid_request');
    });

    it('is a box on the application\'s page; a public application\'s is refused beside the box', async () => {
      const { owner, group } = await ownerWithToken();
      const { clientId, clientSecret } = await makeApp(idp.db, owner.id, group.id, { name: 'Page Bot' });
      const browser = await signIn(idp.url, owner);
      const appPage = `/groups/${group.path}/settings/developer/apps/${clientId}`;
      const before = await browser.get(appPage).expect(200);
      expect(/data-testid="app-client-credentials">([^<]*)</.exec(before.text)?.[1]).to.equal('Not allowed');
      await browser.fill(before, `/apps/${clientId}`, { 'Allow the application to act as itself': 'checked' }).expect(302);
      const after = await browser.get(appPage).expect(200);
      expect(/data-testid="app-client-credentials">([^<]*)</.exec(after.text)?.[1]).to.match(/^Allowed/);
      expect((await grant(clientId, clientSecret)).access_token).to.match(/^ho_/);

      const form = await browser.get(`/groups/${group.path}/settings/developer/apps/new`).expect(200);
      const refused = await browser.fill(form, '/apps', {
        'Application name': 'Phone App',
        'Homepage URL': 'https://phone.example.test',
        'Authorization callback URL': CALLBACK,
        Public: 'checked',
        'Allow the application to act as itself': 'checked',
      }).expect(400);
      expect(fieldError(refused.text, 'clientCredentials')).to.equal('Allow the application to act as itself cannot be on for a public application: it has no client secret to authenticate with');
      expect(await idp.db('oauth_apps').where({ name: 'Phone App' }).first()).to.equal(undefined);

      // The box, its hint and its error in the page's language.
      for (const lang of ['de', 'ja'] as Language[]) {
        const t = translator(lang);
        const reader = await signIn(new Browser(idp.url, { headers: { 'accept-language': lang } }), owner);
        const newForm = await reader.get(`/groups/${group.path}/settings/developer/apps/new`).expect(200);
        expect(unescapeHtml(newForm.text)).to.include(t('apps:hints.clientCredentials'));
        const wrong = await reader.fill(newForm, '/apps', {
          [t('apps:labels.name')]: 'Phone App',
          [t('apps:labels.homepageURL')]: 'https://phone.example.test',
          [t('apps:labels.callbackURL')]: CALLBACK,
          [t('apps:types.public')]: 'checked',
          [t('apps:labels.clientCredentials')]: 'checked',
        }).expect(400);
        expect(fieldError(wrong.text, 'clientCredentials')).to.equal(t('messages-apps:clientCredentialsPublic'));
      }
    });
  });
});
