import { expect } from 'chai';
import type { GroupRow } from '../../src/db/groups.js';
import { findRole } from '../../src/db/groups.js';
import { MAX_ACTIVE_SECRETS } from '../../src/services/apps.js';
import { changeRole } from '../../src/services/groups.js';
import { digest, isWellFormedToken } from '../../src/tokens.js';
import { call, expectInvalidToken } from '../helpers/api.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { Browser, signIn, visit } from '../helpers/browser.js';
import { CALLBACK, groupAccess, joinGroup, makeApp, makeGroup, makeUser, signedInOwner, type TestUser } from '../helpers/factories.js';
import { errorMessage, fieldError, findOnceKey, formAction, inputValue, unescapeHtml } from '../helpers/html.js';
import { authorize, tokenRequest } from '../helpers/oauth.js';
import { formatDate } from '../../src/i18n.js';

const SCRIPT = '<script>alert(1)</script>';
const IMG = '"><img src=x onerror=alert(1)>';

const VALID = {
  name: 'Deploy Bot',
  homepageURL: 'https://deploy.example.test',
  description: 'Ships things',
  callbackURL: CALLBACK,
};

/** The client ID and, when the page shows one, the secret of an application's edit view. */
function shownClientId(html: string): string | undefined {
  return /data-testid="client-id">([^<]*)</.exec(html)?.[1];
}
function shownSecret(html: string): string | undefined {
  return /data-testid="client-secret">([^<]*)</.exec(html)?.[1];
}

/** The rows of a table as plain text, tags removed. */
function rows(html: string, testId: string): string[] {
  return [...html.matchAll(new RegExp(`<tr data-testid="${testId}"[^>]*>([\\s\\S]*?)</tr>`, 'g'))].map((m) =>
    unescapeHtml(m[1]!.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ').trim()),
  );
}

describeEachProfile('OAuth application pages', (profile) => {
  const idp = useIdp(profile);
  const developer = (group: GroupRow) => `/groups/${group.path}/settings/developer`;
  const appPage = (group: GroupRow, clientId: string) => `${developer(group)}/apps/${clientId}`;
  const count = async (table: string, where: Record<string, unknown>) =>
    Number(((await idp.db(table).where(where).count({ n: '*' }).first()) as { n: number | string }).n);
  const appRow = (clientId: string) => idp.db('oauth_apps').where({ client_id: clientId }).first();
  const secretRows = async (clientId: string) => {
    const app = await appRow(clientId);
    return app ? ((await idp.db('oauth_app_secrets').where({ app_id: app.id }).orderBy('id')) as Array<{ id: number; digest: string; last_four: string }>) : [];
  };

  const groupWithOwner = () => signedInOwner(idp);

  const join = (group: GroupRow, owner: TestUser, role: 'owner' | 'maintainer' | 'member') => joinGroup(idp.db, group, owner, role);

  /** Fills and submits the New application form. */
  function create(client: Browser, group: GroupRow, fields: Partial<typeof VALID> = {}) {
    return client.submit(`${developer(group)}/apps`, { ...VALID, ...fields });
  }

  /** Submits a form that creates and opens the page it redirects to (Post/Redirect/Get). */
  async function submitAndFollow(client: Browser, url: string, fields: Record<string, string> = {}) {
    return client.follow(await client.submit(url, fields).expect(302)).expect(200);
  }

  /** Fills and submits the New application form, and opens the application's page it leads to. */
  function createAndOpen(client: Browser, group: GroupRow, fields: Partial<typeof VALID> = {}) {
    return submitAndFollow(client, `${developer(group)}/apps`, { ...VALID, ...fields });
  }

  async function createdApp(client: Browser, group: GroupRow, fields: Partial<typeof VALID> = {}) {
    const res = await createAndOpen(client, group, fields);
    return { clientId: shownClientId(res.text)!, clientSecret: shownSecret(res.text)!, html: res.text };
  }

  /** The authorization-code flow for `user` against an application; returns the code, not yet exchanged. */
  async function codeFor(app: { clientId: string; redirectUri?: string }, user: TestUser, scope = 'groups:read-only'): Promise<string> {
    const callback = await authorize(new Browser(idp.url), { clientId: app.clientId, redirectUri: app.redirectUri ?? CALLBACK, scope }, user);
    const code = callback.searchParams.get('code');
    expect(code, callback.toString()).to.be.a('string');
    return code!;
  }

  function exchange(clientId: string, clientSecret: string, code: string) {
    return tokenRequest(idp.url, { query: { client_id: clientId, client_secret: clientSecret, code, redirect_uri: CALLBACK } });
  }

  async function tokensFor(clientId: string, clientSecret: string, user: TestUser) {
    const res = await exchange(clientId, clientSecret, await codeFor({ clientId }, user));
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    return { accessToken: String(res.body.access_token), refreshToken: String(res.body.refresh_token) };
  }

  describe('the click path', () => {
    it('shows Developer in the owner’s settings, listing no applications and a New application button', async () => {
      const { group, client } = await groupWithOwner();
      const settings = await client.get(`/groups/${group.path}/settings`).expect(200);
      expect(settings.text).to.include(`href="/groups/${group.path}/settings/developer"`);
      const res = await client.get(developer(group)).expect(200);
      expect(res.text).to.include('<h1>Developer</h1>');
      expect(res.text).to.include('data-testid="no-apps"');
      expect(res.text).to.match(new RegExp(`<a class="button primary" href="${developer(group)}/apps/new">New application</a>`));
    });

    it('shows the new application form with GitHub’s labels and a Create button', async () => {
      const { group, client } = await groupWithOwner();
      const res = await client.get(`${developer(group)}/apps/new`).expect(200);
      for (const [name, label] of [['name', 'Application name'], ['homepageURL', 'Homepage URL'], ['description', 'Description'], ['callbackURL', 'Authorization callback URL']]) {
        expect(res.text).to.include(`<label for="${name}">${label}</label>`);
      }
      expect(res.text).to.include('<button type="submit" class="primary">Create</button>');
      expect(res.text).to.include(`action="${developer(group)}/apps"`);
    });

    it('creates an application and shows its edit view with the client ID and, once, the secret', async () => {
      const { owner, group, client } = await groupWithOwner();
      const res = await createAndOpen(client, group);
      expect(res.headers.get('cache-control')).to.include('no-store');
      const clientId = shownClientId(res.text)!;
      const secret = shownSecret(res.text)!;
      const row = await appRow(clientId);
      expect(row).to.include({ group_id: group.id, name: VALID.name, homepage_url: VALID.homepageURL, description: VALID.description, callback_url: CALLBACK });
      expect(isWellFormedToken(secret, 'hs_')).to.equal(true);
      expect((await secretRows(clientId)).map((s) => s.digest)).to.deep.equal([digest(secret)]);
      expect(res.text).to.include('It will not be shown again');
      expect(res.text).to.include('data-copy="#client-secret"');
      expect(res.text).to.include('Application created.');
      expect(inputValue(res.text, 'name')).to.equal(VALID.name);
      expect(await count('oauth_apps', { created_by: owner.id })).to.equal(1);
    });

    it('lists the group’s applications on the Developer page, linking to each', async () => {
      const { group, client } = await groupWithOwner();
      const first = await createdApp(client, group, { name: 'First' });
      const second = await createdApp(client, group, { name: 'Second' });
      const res = await client.get(developer(group)).expect(200);
      const listed = rows(res.text, 'app-row');
      expect(listed).to.have.length(2);
      expect(listed[0]).to.include('First').and.include(first.clientId);
      expect(listed[1]).to.include('Second').and.include(second.clientId);
      expect(res.text).to.include(`href="${appPage(group, first.clientId)}"`);
      expect(res.text).not.to.include(first.clientSecret);
    });

    it('shows the edit view later with the client ID and the secret masked, never the secret', async () => {
      const { group, client } = await groupWithOwner();
      const app = await createdApp(client, group);
      const res = await client.get(appPage(group, app.clientId)).expect(200);
      expect(shownClientId(res.text)).to.equal(app.clientId);
      expect(shownSecret(res.text)).to.equal(undefined);
      expect(res.text).not.to.include(app.clientSecret);
      const [secret] = rows(res.text, 'secret-row');
      expect(secret).to.include(`hs_••••••••${app.clientSecret.slice(-4)}`).and.include('never');
      expect(res.text).to.include('Generate a new client secret</button>');
      expect(res.text).to.include('Update application</button>');
      expect(res.text).to.include('Delete application</button>');
      for (const [name, value] of Object.entries({ name: VALID.name, homepageURL: VALID.homepageURL, callbackURL: VALID.callbackURL })) {
        expect(inputValue(res.text, name), name).to.equal(value);
      }
      expect(res.text).to.include(`>${VALID.description}</textarea>`);
    });

    it('shows when each secret was created and last used', async () => {
      const { group, client } = await groupWithOwner();
      const app = await createdApp(client, group);
      const [secret] = await secretRows(app.clientId);
      await idp.db('oauth_app_secrets').where({ id: secret!.id }).update({ last_used_at: '2031-02-03T04:05:06.000Z' });
      const res = await client.get(appPage(group, app.clientId)).expect(200);
      const [row] = rows(res.text, 'secret-row');
      expect(row).to.include(formatDate(new Date('2031-02-03T04:05:06.000Z'), 'en')).and.not.include('never');
      expect(res.text).to.match(/<tr data-testid="secret-row"[\s\S]*?<time datetime="\d{4}-\d\d-\d\dT[^"]+">[\s\S]*?<time datetime="2031-02-03T04:05:06.000Z">/);
    });

    it('updates the four fields and says so', async () => {
      const { group, client } = await groupWithOwner();
      const app = await createdApp(client, group);
      const changed = { name: 'Renamed', homepageURL: 'https://new.example.test/home', description: 'New words', callbackURL: 'https://new.example.test/cb' };
      await client.submit(appPage(group, app.clientId), changed).expect(302, `${appPage(group, app.clientId)}?notice=callback-changed`);
      expect(await appRow(app.clientId)).to.include({ name: 'Renamed', homepage_url: changed.homepageURL, description: 'New words', callback_url: changed.callbackURL });
      const res = await client.get(`${appPage(group, app.clientId)}?notice=updated`).expect(200);
      expect(res.text).to.include('Application updated.');
      expect(inputValue(res.text, 'callbackURL')).to.equal(changed.callbackURL);
    });

    it('ends every user’s authorization when Update application changes the callback URL, and says so beside the field, after the update and in the audit log', async () => {
      const { owner, group, client } = await groupWithOwner();
      const app = await createdApp(client, group);
      const person = await join(group, owner, 'member');
      const { accessToken } = await tokensFor(app.clientId, app.clientSecret, person);
      const personBrowser = await signIn(idp.url, person);
      const flow = (redirectUri: string) => personBrowser.follow(`/login/oauth/authorize?${new URLSearchParams({ client_id: app.clientId, redirect_uri: redirectUri, state: 's' })}`, redirectUri);
      // Authorized once: no consent page the next time.
      expect((await flow(CALLBACK)).headers.get('location') ?? '').to.match(/[?&]code=/);

      // The edit form, with the values it shows, and a new callback URL typed in.
      const edit = await client.get(appPage(group, app.clientId)).expect(200);
      const form = /<form[^>]*data-testid="edit-app-form"[^>]*>([\s\S]*?)<\/form>/.exec(edit.text)![1]!;
      expect(unescapeHtml(form)).to.include('Changing it ends every user\'s authorization of the application: each must authorize it again.');
      const fields = Object.fromEntries([...form.matchAll(/<(?:input|textarea)[^>]*name="([^"]+)"/g)].map((m) => [m[1]!, ''] as [string, string]));
      for (const name of Object.keys(fields)) fields[name] = inputValue(form, name) ?? unescapeHtml(new RegExp(`<textarea[^>]*name="${name}"[^>]*>([^<]*)<`).exec(form)?.[1] ?? '');
      delete fields._csrf;
      for (const name of ['deviceFlow', 'requirePushedAuthorizationRequests', 'clientCredentials']) delete fields[name];
      const moved = 'http://127.0.0.1:9999/moved/callback';
      const updated = await client.follow(await client.submit(appPage(group, app.clientId), { ...fields, callbackURL: moved }).expect(302)).expect(200);
      expect(updated.text).to.include('Its authorization callback URL changed, so every user&#39;s authorization of it ended: each must authorize it again.');

      const again = await flow(moved);
      expect(again.status).to.equal(200);
      expect(again.text).to.include('/confirm"');
      expectInvalidToken(idp, await call(idp, '/apis/v2/user', { token: accessToken }));
      const [event] = rows((await client.get(`/groups/${group.path}/settings/audit`).expect(200)).text, 'audit-row');
      expect(event).to.include('Application updated').and.include(`${CALLBACK} → ${moved}`).and.include('every user\'s authorization ended, so each consents again (1 user)');
    });

    it('turns Enable Device Flow and Require pushed authorization requests on and off, each off by default', async () => {
      const { group, client } = await groupWithOwner();
      const app = await createdApp(client, group);
      expect(await appRow(app.clientId)).to.deep.include({ device_flow: profile === 'sqlite' ? 0 : false });
      expect(app.html).to.include('id="deviceFlow" name="deviceFlow" value="on"');
      const fact = (html: string, id: string) => new RegExp(`data-testid="${id}">([^<]*)<`).exec(html)?.[1];
      const before = await client.get(appPage(group, app.clientId)).expect(200);
      expect(fact(before.text, 'app-device-flow')).to.equal('Disabled');
      expect(fact(before.text, 'app-par')).to.equal('Not required');
      const fields = { name: VALID.name, homepageURL: VALID.homepageURL, description: '', callbackURL: VALID.callbackURL };
      await client.submit(appPage(group, app.clientId), { ...fields, deviceFlow: 'on', requirePushedAuthorizationRequests: 'on' }).expect(302);
      const on = await appRow(app.clientId);
      expect(Boolean(on.device_flow) && Boolean(on.require_pushed_authorization_requests)).to.equal(true);
      const page = await client.get(appPage(group, app.clientId)).expect(200);
      expect(page.text).to.match(/name="deviceFlow" value="on"[^>]* checked/);
      // Said in the application's facts, not only by the boxes of the edit form.
      expect(fact(page.text, 'app-device-flow')).to.match(/^Enabled/);
      expect(fact(page.text, 'app-par')).to.match(/^Required/);
      // An unchecked box sends nothing: off.
      await client.submit(appPage(group, app.clientId), fields).expect(302);
      const off = await appRow(app.clientId);
      expect(Boolean(off.device_flow) || Boolean(off.require_pushed_authorization_requests)).to.equal(false);
    });

    it('generates a second secret, shown once, and keeps the first', async () => {
      const { group, client } = await groupWithOwner();
      const app = await createdApp(client, group);
      const res = await submitAndFollow(client, `${appPage(group, app.clientId)}/secrets`);
      const second = shownSecret(res.text)!;
      expect(isWellFormedToken(second, 'hs_')).to.equal(true);
      expect(second).not.to.equal(app.clientSecret);
      expect((await secretRows(app.clientId)).map((s) => s.digest)).to.deep.equal([digest(app.clientSecret), digest(second)]);
      expect(rows(res.text, 'secret-row')).to.have.length(2);
      const later = await client.get(appPage(group, app.clientId)).expect(200);
      expect(later.text).not.to.include(second);
    });

    it('refuses a third secret: the button is disabled and a forced request is a 409 that makes nothing', async () => {
      const { group, client } = await groupWithOwner();
      const app = await createdApp(client, group);
      await submitAndFollow(client, `${appPage(group, app.clientId)}/secrets`);
      const page = await client.get(appPage(group, app.clientId)).expect(200);
      expect(page.text).to.include('disabled aria-describedby="secret-limit">Generate a new client secret</button>');
      const res = await client.submit(`${appPage(group, app.clientId)}/secrets`, {}).expect(409);
      expect(errorMessage(res.text)).to.include(`at most ${MAX_ACTIVE_SECRETS} active secrets`);
      expect(shownSecret(res.text)).to.equal(undefined);
      expect(await secretRows(app.clientId)).to.have.length(MAX_ACTIVE_SECRETS);
    });

    it('revokes one of two secrets: the revoked one is 401 invalid_client, the other still works', async () => {
      const { owner, group, client } = await groupWithOwner();
      const app = await createdApp(client, group);
      const second = shownSecret((await submitAndFollow(client, `${appPage(group, app.clientId)}/secrets`)).text)!;
      const [firstRow] = await secretRows(app.clientId);
      await client
        .submit(`${appPage(group, app.clientId)}/secrets/${firstRow!.id}/revoke`, {})
        .expect(302, `${appPage(group, app.clientId)}?notice=secret-revoked`);
      const revoked = await exchange(app.clientId, app.clientSecret, await codeFor(app, owner));
      expect(revoked.status).to.equal(401);
      expect(revoked.body.error).to.equal('invalid_client');
      const ok = await exchange(app.clientId, second, await codeFor(app, owner));
      expect(ok.status, JSON.stringify(ok.body)).to.equal(200);
    });

    it('answers revoking an unknown secret with a 404 page', async () => {
      const { group, client } = await groupWithOwner();
      const app = await createdApp(client, group);
      await client.submit(`${appPage(group, app.clientId)}/secrets/2147483647/revoke`, {}).expect(404);
      await client.submit(`${appPage(group, app.clientId)}/secrets/abc/revoke`, {}).expect(404);
      expect(await secretRows(app.clientId)).to.have.length(1);
    });

    it('asks on a page of its own before deleting, and Cancel keeps the application', async () => {
      const { group, client } = await groupWithOwner();
      const app = await createdApp(client, group, { name: 'Doomed' });
      const edit = await client.get(appPage(group, app.clientId)).expect(200);
      expect(edit.text).to.include(`<form method="get" action="${appPage(group, app.clientId)}/delete"`);
      const res = await client.get(`${appPage(group, app.clientId)}/delete`).expect(200);
      expect(res.text).to.include('Delete <span data-testid="app-name">Doomed</span>?');
      expect(res.text).to.include(`<form method="post" action="${appPage(group, app.clientId)}/delete"`);
      expect(res.text).to.include('<button type="submit" class="danger">Delete application</button>');
      expect(res.text).to.include(`<a class="button" href="${appPage(group, app.clientId)}">Cancel</a>`);
      expect(await appRow(app.clientId)).not.to.equal(undefined);
    });

    it('deletes an application after confirmation and lists it no more', async () => {
      const { group, client } = await groupWithOwner();
      const app = await createdApp(client, group);
      await client.submit(`${appPage(group, app.clientId)}/delete`, {}).expect(302, `${developer(group)}?notice=deleted`);
      expect(await appRow(app.clientId)).to.equal(undefined);
      const list = await client.get(`${developer(group)}?notice=deleted`).expect(200);
      expect(list.text).to.include('Application deleted.');
      expect(list.text).not.to.include(app.clientId);
      await client.get(appPage(group, app.clientId)).expect(404);
    });
  });

  describe('deleting stops everything issued to the application at once', () => {
    it('makes its access token 401, its refresh token and secret invalid_client, and an earlier code useless', async () => {
      const { owner, group, client } = await groupWithOwner();
      const user = await join(group, owner, 'member');
      const app = await createdApp(client, group);
      const tokens = await tokensFor(app.clientId, app.clientSecret, user);
      const pendingCode = await codeFor(app, owner);
      expect((await call(idp, '/apis/v2/user', { token: tokens.accessToken })).status).to.equal(200);

      await client.submit(`${appPage(group, app.clientId)}/delete`, {}).expect(302);

      expectInvalidToken(idp, await call(idp, '/apis/v2/groups', { token: tokens.accessToken }));
      const refreshed = await tokenRequest(idp.url, { query: { grant_type: 'refresh_token', refresh_token: tokens.refreshToken, client_id: app.clientId, client_secret: app.clientSecret } });
      expect(refreshed.status).to.equal(401);
      expect(refreshed.body.error).to.equal('invalid_client');
      const redeemed = await exchange(app.clientId, app.clientSecret, pendingCode);
      expect(redeemed.status).to.equal(401);
      expect(redeemed.body.error).to.equal('invalid_client');
      expect(redeemed.body).not.to.have.property('access_token');
    });

    it('stops the tokens in storage too, not only the client: they are gone from the provider', async () => {
      const { owner, group, client } = await groupWithOwner();
      const app = await createdApp(client, group);
      const tokens = await tokensFor(app.clientId, app.clientSecret, owner);
      await client.submit(`${appPage(group, app.clientId)}/delete`, {}).expect(302);
      expect(await idp.idp.provider.AccessToken.find(tokens.accessToken)).to.equal(undefined);
      expect(await idp.idp.provider.RefreshToken.find(tokens.refreshToken)).to.equal(undefined);
    });
  });

  describe('validation', () => {
    const cases: Array<{ field: keyof typeof VALID; value: string; message: RegExp }> = [
      { field: 'name', value: '', message: /^Application name is required$/ },
      { field: 'name', value: '   ', message: /name is required/ },
      { field: 'name', value: 'n'.repeat(101), message: /at most 100 characters/ },
      { field: 'homepageURL', value: '', message: /^Homepage URL must be an absolute http\(s\) URL$/ },
      { field: 'homepageURL', value: 'deploy.example.test', message: /absolute http\(s\) URL/ },
      { field: 'homepageURL', value: 'ftp://deploy.example.test', message: /absolute http\(s\) URL/ },
      { field: 'homepageURL', value: 'javascript:alert(1)', message: /absolute http\(s\) URL/ },
      { field: 'homepageURL', value: `https://deploy.example.test/${'a'.repeat(2048)}`, message: /at most 2048 characters/ },
      { field: 'description', value: 'd'.repeat(401), message: /at most 400 characters/ },
      { field: 'callbackURL', value: '', message: /^Authorization callback URL must be an absolute URL$/ },
      { field: 'callbackURL', value: '/callback', message: /absolute URL/ },
      { field: 'callbackURL', value: 'http://deploy.example.test/callback', message: /must use https/ },
      { field: 'callbackURL', value: 'http://127.0.0.2/callback', message: /must use https/ },
      { field: 'callbackURL', value: 'javascript:alert(1)', message: /must use https/ },
      { field: 'callbackURL', value: 'https://deploy.example.test/callback#top', message: /fragment/ },
      { field: 'callbackURL', value: 'https://deploy.example.test/callback#', message: /fragment/ },
      { field: 'callbackURL', value: `https://deploy.example.test/${'a'.repeat(2048)}`, message: /at most 2048 characters/ },
    ];

    for (const c of cases) {
      it(`re-shows the new application form with “${c.message.source}” next to ${c.field} for ${JSON.stringify(c.value.slice(0, 40))}`, async () => {
        const { group, client } = await groupWithOwner();
        const fields = { ...VALID, name: 'Typed name', [c.field]: c.value };
        const res = await create(client, group, fields).expect(400);
        expect(fieldError(res.text, c.field)).to.match(c.message);
        for (const other of Object.keys(VALID).filter((f) => f !== c.field)) expect(fieldError(res.text, other), other).to.equal(undefined);
        for (const name of ['name', 'homepageURL', 'callbackURL'] as const) expect(inputValue(res.text, name) ?? '', name).to.equal(fields[name]);
        expect(res.text).to.include(`>${fields.description}</textarea>`);
        expect(shownSecret(res.text)).to.equal(undefined);
        expect(await count('oauth_apps', { group_id: group.id })).to.equal(0);
      });
    }

    for (const callbackURL of ['http://localhost:8080/cb', 'http://127.0.0.1/cb', 'http://[::1]:3000/cb', 'https://deploy.example.test/cb?x=1']) {
      it(`accepts the callback URL ${callbackURL}`, async () => {
        const { group, client } = await groupWithOwner();
        const app = await createdApp(client, group, { callbackURL });
        expect((await appRow(app.clientId)).callback_url).to.equal(callbackURL);
      });
    }

    it('re-shows the edit form with the error next to the field and the typed values, changing nothing', async () => {
      const { group, client } = await groupWithOwner();
      const app = await createdApp(client, group);
      const typed = { name: 'Typed', homepageURL: 'https://typed.example.test', description: 'Typed words', callbackURL: 'http://evil.example.test/cb' };
      const res = await client.submit(appPage(group, app.clientId), typed).expect(400);
      expect(fieldError(res.text, 'callbackURL')).to.match(/must use https/);
      expect(inputValue(res.text, 'name')).to.equal('Typed');
      expect(inputValue(res.text, 'callbackURL')).to.equal(typed.callbackURL);
      expect(res.text).to.include('>Typed words</textarea>');
      expect(shownClientId(res.text)).to.equal(app.clientId);
      expect(await appRow(app.clientId)).to.include({ name: VALID.name, callback_url: CALLBACK });
    });
  });

  describe('a public application', () => {
    /** Fills the New application form as a person would, choosing Public, and opens the page it leads to. */
    async function createdPublicApp(client: Browser, group: GroupRow) {
      const form = await client.get(`${developer(group)}/apps/new`).expect(200);
      const created = await client.fill(form, '/apps', {
        'Application name': VALID.name,
        'Homepage URL': VALID.homepageURL,
        'Authorization callback URL': CALLBACK,
        Public: 'checked',
      }).expect(302);
      return client.follow(created).expect(200);
    }
    const noticeOf = (html: string) => unescapeHtml(/data-testid="notice">([^<]*)</.exec(html)?.[1] ?? 'no notice');

    it('is created with a notice that speaks of no client secret', async () => {
      const { group, client } = await groupWithOwner();
      const page = await createdPublicApp(client, group);
      expect((await appRow(shownClientId(page.text)!)).client_type).to.equal('public');
      expect(shownSecret(page.text)).to.equal(undefined);
      expect(noticeOf(page.text)).to.equal('Application created. It is public: it has no client secret, and every authorization must use PKCE (S256).');
    });

    it('says the application stays when all user tokens are revoked, naming no client secrets', async () => {
      const { group, client } = await groupWithOwner();
      const page = await createdPublicApp(client, group);
      expect(page.text).to.include('each must authorize it again. The application stays.</p>');
      const confirm = await client.get(`${page.url.pathname}/revoke-tokens`).expect(200);
      expect(confirm.text).to.include('authorization again. The application stays.</p>');
      expect(confirm.text).not.to.include('client secret');
    });
  });

  describe('sign-out redirect URLs', () => {
    /** The text of the Sign-out redirect URLs box. */
    const signOutBox = (html: string) => unescapeHtml(/<textarea id="signOutRedirectURLs"[^>]*>([^<]*)<\/textarea>/.exec(html)?.[1] ?? 'no box');

    it('offers a Sign-out redirect URLs box on the New application form', async () => {
      const { group, client } = await groupWithOwner();
      const res = await client.get(`${developer(group)}/apps/new`).expect(200);
      expect(res.text).to.include('<label for="signOutRedirectURLs">Sign-out redirect URLs</label>');
      expect(signOutBox(res.text)).to.equal('');
    });

    it('stores one URL a line, blank lines ignored, and shows them again on the edit view', async () => {
      const { group, client } = await groupWithOwner();
      const app = await createdApp(client, group, { signOutRedirectURLs: 'https://deploy.example.test/bye\r\n\r\nhttp://localhost:8080/bye\r\n' } as Partial<typeof VALID>);
      expect(JSON.parse((await appRow(app.clientId)).sign_out_urls)).to.deep.equal(['https://deploy.example.test/bye', 'http://localhost:8080/bye']);
      const page = await client.get(appPage(group, app.clientId)).expect(200);
      expect(signOutBox(page.text)).to.equal('https://deploy.example.test/bye\nhttp://localhost:8080/bye');
    });

    it('replaces the URLs on Update application', async () => {
      const { group, client } = await groupWithOwner();
      const app = await createdApp(client, group, { signOutRedirectURLs: 'https://deploy.example.test/a' } as Partial<typeof VALID>);
      await client.submit(appPage(group, app.clientId), { ...VALID, signOutRedirectURLs: 'https://deploy.example.test/b' }).expect(302);
      expect(JSON.parse((await appRow(app.clientId)).sign_out_urls)).to.deep.equal(['https://deploy.example.test/b']);
    });

    it('names every bad line at once, counting the blank lines of the box', async () => {
      const { group, client } = await groupWithOwner();
      const form = await client.get(`${developer(group)}/apps/new`).expect(200);
      const typed = 'https://deploy.example.test/ok\n\nhttp://deploy.example.test/bye\nnot a url';
      const res = await client.fill(form, '/apps', {
        'Application name': VALID.name,
        'Homepage URL': VALID.homepageURL,
        'Authorization callback URL': CALLBACK,
        'Sign-out redirect URLs': typed,
      }).expect(400);
      const error = fieldError(res.text, 'signOutRedirectURLs')!;
      expect(error).to.match(/^Sign-out redirect URLs, line 3, must use https/);
      expect(error).to.match(/line 4, must be an absolute/);
      expect(signOutBox(res.text)).to.equal(typed);
    });

    it('shows a bad URL next to the box and keeps what was typed, changing nothing', async () => {
      const { group, client } = await groupWithOwner();
      const app = await createdApp(client, group);
      const typed = 'https://deploy.example.test/ok\nhttp://deploy.example.test/bye';
      const res = await client.submit(appPage(group, app.clientId), { ...VALID, signOutRedirectURLs: typed }).expect(400);
      expect(fieldError(res.text, 'signOutRedirectURLs')).to.equal('Sign-out redirect URLs, line 2, must use https (http only for localhost, 127.0.0.1 or [::1])');
      expect(signOutBox(res.text)).to.equal(typed);
      expect((await appRow(app.clientId)).sign_out_urls).to.equal('[]');
    });
  });

  describe('who may', () => {
    for (const role of ['maintainer', 'member'] as const) {
      it(`shows a ${role} no Developer link on the group page${role === 'maintainer' ? ' nor on Members' : ', nor Settings'}`, async () => {
        const { owner, group } = await groupWithOwner();
        const user = await signIn(idp.url, await join(group, owner, role));
        const res = await user.get(`/groups/${group.path}`).expect(200);
        expect(res.text).not.to.include('Developer');
        if (role === 'member') expect(res.text).not.to.include(`/groups/${group.path}/settings`);
        else expect((await user.get(`/groups/${group.path}/settings/members`).expect(200)).text).not.to.include(developer(group));
      });

      it(`answers a ${role} with 403 on every Developer page and form, changing nothing`, async () => {
        const { owner, group, client } = await groupWithOwner();
        const app = await createdApp(client, group);
        const [secret] = await secretRows(app.clientId);
        const user = await signIn(idp.url, await join(group, owner, role));
        const audit = await count('audit_events', { group_id: group.id });
        const before = await appRow(app.clientId);
        for (const url of [developer(group), `${developer(group)}/apps/new`, appPage(group, app.clientId), `${appPage(group, app.clientId)}/delete`]) {
          const res = await user.get(url);
          expect(res.status, url).to.equal(403);
          expect(res.text).not.to.include(app.clientId);
        }
        const posts: Array<[string, Record<string, string>]> = [
          [`${developer(group)}/apps`, VALID],
          [appPage(group, app.clientId), { ...VALID, name: 'Taken over' }],
          [`${appPage(group, app.clientId)}/secrets`, {}],
          [`${appPage(group, app.clientId)}/secrets/${secret!.id}/revoke`, {}],
          [`${appPage(group, app.clientId)}/delete`, {}],
        ];
        for (const [url, fields] of posts) {
          const res = await user.submit(url, fields);
          expect(res.status, url).to.equal(403);
          expect(shownSecret(res.text), url).to.equal(undefined);
        }
        expect(await appRow(app.clientId)).to.deep.equal(before);
        expect(await count('oauth_apps', { group_id: group.id })).to.equal(1);
        expect(await secretRows(app.clientId)).to.have.length(1);
        expect(await count('audit_events', { group_id: group.id })).to.equal(audit);
      });
    }

    it('answers a signed-in outsider with a 403 page on the Developer pages', async () => {
      const { group, client } = await groupWithOwner();
      const app = await createdApp(client, group);
      const outsider = await signIn(idp.url, await makeUser(idp.db));
      for (const url of [developer(group), `${developer(group)}/apps/new`, appPage(group, app.clientId)]) {
        expect((await outsider.get(url)).status, url).to.equal(403);
      }
      expect((await outsider.submit(`${appPage(group, app.clientId)}/delete`, {})).status).to.equal(403);
      expect(await appRow(app.clientId)).not.to.equal(undefined);
    });

    it('sends a signed-out visitor to the sign-in page and changes nothing', async () => {
      const { group, client } = await groupWithOwner();
      const app = await createdApp(client, group);
      for (const url of [developer(group), `${developer(group)}/apps/new`, appPage(group, app.clientId), `${appPage(group, app.clientId)}/delete`]) {
        await new Browser(idp.url).get(url).expect(302, `/login?return_to=${encodeURIComponent(url)}`);
      }
      const anonymous = await visit(idp.url);
      await anonymous.submit(`${appPage(group, app.clientId)}/delete`, {}).expect(302, `/login?return_to=${encodeURIComponent('/groups')}`);
      expect(await appRow(app.clientId)).not.to.equal(undefined);
    });

    it('takes the applications away from an owner demoted to maintainer at once', async () => {
      const { owner, group, client } = await groupWithOwner();
      const app = await createdApp(client, group);
      const other = await join(group, owner, 'owner');
      await changeRole(idp.db, await groupAccess(idp.db, other.id, group.id), owner.id, 'maintainer');
      await client.get(developer(group)).expect(403);
      await client.get(appPage(group, app.clientId)).expect(403);
      await client.submit(`${appPage(group, app.clientId)}/delete`, {}).expect(403);
      expect(await appRow(app.clientId)).not.to.equal(undefined);
    });

    it('never lets the last owner be demoted, so the applications always keep a manager', async () => {
      const { owner, group, client } = await groupWithOwner();
      await join(group, owner, 'maintainer');
      await client.submit(`/groups/${group.path}/settings/members/${owner.id}/role`, { role: 'maintainer' }).expect(409);
      expect(await findRole(idp.db, group.id, owner.id)).to.equal('owner');
      await client.get(developer(group)).expect(200);
    });
  });

  describe('forged addresses', () => {
    it('answers an application of another group under this group’s address with a 404, even for an owner of both', async () => {
      const { owner, group, client } = await groupWithOwner();
      const otherGroup = await makeGroup(idp.db, owner.id);
      const other = await makeApp(idp.db, owner.id, otherGroup.id, { name: 'Elsewhere' });
      const [secret] = await secretRows(other.clientId);
      const forged = appPage(group, other.clientId);
      for (const url of [forged, `${forged}/delete`]) {
        const res = await client.get(url).expect(404);
        expect(res.text).not.to.include('Elsewhere');
      }
      await client.submit(forged, { ...VALID, name: 'Hijacked' }).expect(404);
      await client.submit(`${forged}/secrets`, {}).expect(404);
      await client.submit(`${forged}/secrets/${secret!.id}/revoke`, {}).expect(404);
      await client.submit(`${forged}/delete`, {}).expect(404);
      expect(await appRow(other.clientId)).to.include({ name: 'Elsewhere' });
      expect(await secretRows(other.clientId)).to.have.length(1);
    });

    it('answers an application of a group the owner does not belong to with a 404 and changes nothing', async () => {
      const { group, client } = await groupWithOwner();
      const stranger = await makeUser(idp.db);
      const theirs = await makeGroup(idp.db, stranger.id);
      const other = await makeApp(idp.db, stranger.id, theirs.id, { name: 'Not yours' });
      await client.get(appPage(group, other.clientId)).expect(404);
      await client.submit(`${appPage(group, other.clientId)}/delete`, {}).expect(404);
      // Under its own group's address it is that group's settings, which this owner may not open.
      await client.get(appPage(theirs, other.clientId)).expect(403);
      expect(await appRow(other.clientId)).not.to.equal(undefined);
    });

    it('answers revoking another application’s secret through this application’s address with a 404', async () => {
      const { owner, group, client } = await groupWithOwner();
      const mine = await createdApp(client, group);
      const other = await makeApp(idp.db, owner.id, group.id, { name: 'Sibling' });
      const [theirs] = await secretRows(other.clientId);
      await client.submit(`${appPage(group, mine.clientId)}/secrets/${theirs!.id}/revoke`, {}).expect(404);
      expect(await secretRows(other.clientId)).to.have.length(1);
    });

    it('answers an unknown or absurd client ID with a 404', async () => {
      const { group, client } = await groupWithOwner();
      for (const id of ['0000000000', 'x'.repeat(300), '%27%20or%201%3D1']) {
        await client.get(`${developer(group)}/apps/${id}`).expect(404);
      }
    });
  });

  describe('CSRF', () => {
    it('refuses every Developer form without a CSRF token and changes nothing', async () => {
      const { group, client } = await groupWithOwner();
      const app = await createdApp(client, group);
      const [secret] = await secretRows(app.clientId);
      const before = await appRow(app.clientId);
      const posts: Array<[string, Record<string, string>]> = [
        [`${developer(group)}/apps`, VALID],
        [appPage(group, app.clientId), { ...VALID, name: 'Forged' }],
        [`${appPage(group, app.clientId)}/secrets`, {}],
        [`${appPage(group, app.clientId)}/secrets/${secret!.id}/revoke`, {}],
        [`${appPage(group, app.clientId)}/delete`, {}],
      ];
      for (const [url, fields] of posts) {
        const res = await client.postForm(url, fields);
        expect(res.status, url).to.equal(403);
        expect(shownSecret(res.text)).to.equal(undefined);
        const wrong = await client.postForm(url, { ...fields, _csrf: 'x'.repeat(43) });
        expect(wrong.status, url).to.equal(403);
      }
      expect(await appRow(app.clientId)).to.deep.equal(before);
      expect(await count('oauth_apps', { group_id: group.id })).to.equal(1);
      expect(await secretRows(app.clientId)).to.have.length(1);
    });
  });

  describe('one-time keys: a form creates once', () => {
    /** The New application form's fields with its one-time key, as a person sends them. */
    async function newAppForm(client: Browser, group: GroupRow, fields: Partial<typeof VALID> = {}) {
      const form = await client.get(`${developer(group)}/apps/new`).expect(200);
      return { _once: findOnceKey(form.text)!, ...VALID, ...fields };
    }

    it('shows the existing application, without its secret, for the same form sent again', async () => {
      const { group, client } = await groupWithOwner();
      const fields = await newAppForm(client, group);
      const first = await client.follow(await client.submit(`${developer(group)}/apps`, fields).expect(302)).expect(200);
      const clientId = shownClientId(first.text)!;
      const secret = shownSecret(first.text)!;
      const again = await client.submit(`${developer(group)}/apps`, fields).expect(302, `${appPage(group, clientId)}?notice=app-repeated`);
      const shown = await client.follow(again).expect(200);
      expect(shownClientId(shown.text)).to.equal(clientId);
      expect(shownSecret(shown.text)).to.equal(undefined);
      expect(shown.text).not.to.include(secret);
      expect(unescapeHtml(shown.text)).to.include('This form was submitted already').and.include('was shown once');
      expect(await count('oauth_apps', { group_id: group.id })).to.equal(1);
      expect(await count('oauth_app_secrets', { app_id: (await appRow(clientId)).id })).to.equal(1);
    });

    it('creates one application of 16 copies of one form sent at once', async () => {
      const { group, client } = await groupWithOwner();
      const fields = await newAppForm(client, group);
      const answers = await Promise.all(Array.from({ length: 16 }, () => client.submit(`${developer(group)}/apps`, fields)));
      expect(answers.map((a) => a.status)).to.deep.equal(Array(16).fill(302));
      expect(answers.filter((a) => a.headers.get('location')!.endsWith('?notice=created'))).to.have.length(1);
      expect(await count('oauth_apps', { group_id: group.id })).to.equal(1);
      expect(await count('audit_events', { group_id: group.id, action: 'app.create' })).to.equal(1);
    });

    it('generates one client secret of the same form sent twice or 16 times at once', async () => {
      const { group, client } = await groupWithOwner();
      const app = await createdApp(client, group);
      const page = await client.get(appPage(group, app.clientId)).expect(200);
      const fields = { _once: findOnceKey(page.text)! };
      const answers = await Promise.all(Array.from({ length: 16 }, () => client.submit(`${appPage(group, app.clientId)}/secrets`, fields)));
      expect(answers.filter((a) => a.headers.get('location')!.endsWith('?notice=secret-created'))).to.have.length(1);
      expect(answers.filter((a) => a.headers.get('location')!.endsWith('?notice=secret-repeated'))).to.have.length(15);
      expect(await secretRows(app.clientId)).to.have.length(2);
    });

    it('keeps the key of a form shown again with its errors: corrected, it creates once', async () => {
      const { group, client } = await groupWithOwner();
      const fields = await newAppForm(client, group, { homepageURL: 'nope' });
      const refused = await client.submit(`${developer(group)}/apps`, fields).expect(400);
      expect(findOnceKey(refused.text)).to.equal(fields._once);
      const corrected = { ...fields, homepageURL: VALID.homepageURL };
      await client.submit(`${developer(group)}/apps`, corrected).expect(302, /\?notice=created$/);
      await client.submit(`${developer(group)}/apps`, corrected).expect(302, /\?notice=app-repeated$/);
      expect(await count('oauth_apps', { group_id: group.id })).to.equal(1);
    });

    it('answers a GET at every address a form posts to', async () => {
      const { group, client } = await groupWithOwner();
      const app = await createdApp(client, group);
      await client.get(`${developer(group)}/apps`).expect(302, developer(group));
      await client.get(`${appPage(group, app.clientId)}/secrets`).expect(302, appPage(group, app.clientId));
      await client.get(`${appPage(group, app.clientId)}/secrets/1/revoke`).expect(302, appPage(group, app.clientId));
    });
  });

  describe('audit log', () => {
    it('lists create, update, secret and delete events with the actor and the IP', async () => {
      const { owner, group, client } = await groupWithOwner();
      const app = await createdApp(client, group, { name: 'Audited' });
      await client.submit(appPage(group, app.clientId), { ...VALID, name: 'Audited twice' }).expect(302);
      await submitAndFollow(client, `${appPage(group, app.clientId)}/secrets`);
      const [first, second] = await secretRows(app.clientId);
      await client.submit(`${appPage(group, app.clientId)}/secrets/${first!.id}/revoke`, {}).expect(302);
      await client.submit(`${appPage(group, app.clientId)}/delete`, {}).expect(302);
      const res = await client.get(`/groups/${group.path}/settings/audit`).expect(200);
      const events = rows(res.text, 'audit-row');
      const [deleted, revoked, generated, updated, created] = events;
      expect(created).to.include('Application created').and.include(app.clientId).and.include('name: Audited');
      // An edit lists only what changed, each field by its label, before → after.
      expect(updated).to.include('Application updated').and.include('(Application name: Audited → Audited twice)');
      expect(generated).to.include('Client secret generated').and.include(`secret …${second!.last_four}`);
      expect(revoked).to.include('Client secret revoked').and.include(`secret …${first!.last_four}`).and.not.include('secret #');
      expect(deleted).to.include('Application deleted').and.include('name: Audited twice');
      // The codes stay in the page for machines, never broken into the words.
      for (const code of ['app.create', 'app.update', 'app.secret.create', 'app.secret.revoke', 'app.delete']) expect(res.text).to.include(`data-action="${code}"`);
      for (const event of [deleted, revoked, generated, updated, created]) {
        expect(event).to.include(owner.username).and.include('127.0.0.1');
      }
      expect(res.text).not.to.include(app.clientSecret);
    });

    it('still renders rows written before edits recorded their changes and secrets their last four', async () => {
      const { group, client } = await groupWithOwner();
      const at = new Date().toISOString();
      await idp.db('audit_events').insert([
        { group_id: group.id, actor_id: null, action: 'app.secret.revoke', target: 'abc', details: JSON.stringify({ secretId: 4 }), ip: null, created_at: at },
        { group_id: group.id, actor_id: null, action: 'app.update', target: 'abc', details: JSON.stringify({ name: 'Old', description: '' }), ip: null, created_at: at },
        { group_id: group.id, actor_id: null, action: 'some.future.action', target: 'abc', details: '{not json', ip: null, created_at: at },
      ]);
      const events = rows((await client.get(`/groups/${group.path}/settings/audit`).expect(200)).text, 'audit-row');
      expect(events[0]).to.include('Some future action');
      expect(events[1]).to.include('Application updated').and.include('name: Old, description: (empty)');
      expect(events[2]).to.include('Client secret revoked').and.include('secret #4');
    });
  });

  describe('escaping', () => {
    for (const payload of [SCRIPT, IMG]) {
      const escaped = payload.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&#34;');

      it(`renders ${payload} in every text field escaped on the Developer list, the edit view and the audit log`, async () => {
        const { group, client } = await groupWithOwner();
        const fields = {
          name: `App ${payload}`,
          homepageURL: `https://xss.example.test/${payload}`,
          description: `Words ${payload}`,
          callbackURL: `https://xss.example.test/cb/${payload}`,
        };
        const created = await createAndOpen(client, group, fields);
        const clientId = shownClientId(created.text)!;
        const pages = [
          created.text,
          (await client.get(developer(group)).expect(200)).text,
          (await client.get(appPage(group, clientId)).expect(200)).text,
          (await client.get(`${appPage(group, clientId)}/delete`).expect(200)).text,
          (await client.get(`/groups/${group.path}/settings/audit`).expect(200)).text,
        ];
        for (const html of pages) {
          expect(html).not.to.include(payload);
          expect(html).to.include(escaped);
        }
      });

      it(`re-shows a rejected form with ${payload} escaped in every field`, async () => {
        const { group, client } = await groupWithOwner();
        const res = await create(client, group, { name: payload, homepageURL: payload, description: payload, callbackURL: payload }).expect(400);
        expect(res.text).not.to.include(payload);
        expect(inputValue(res.text, 'name')).to.equal(payload);
        expect(inputValue(res.text, 'callbackURL')).to.equal(payload);
      });

      it(`renders ${payload} in the name, description and homepage escaped on the consent page`, async () => {
        const { owner, group, client } = await groupWithOwner();
        const app = await createdApp(client, group, {
          name: `App ${payload}`,
          homepageURL: `https://xss.example.test/${payload}`,
          description: `Words ${payload}`,
        });
        const user = await join(group, owner, 'member');
        const browser = new Browser(idp.url);
        const login = await browser.follow(`/login/oauth/authorize?${new URLSearchParams({ client_id: app.clientId, redirect_uri: CALLBACK, state: 's' })}`);
        const consent = await browser.submit(formAction(login.text, '/login'), { login: user.username, password: user.password });
        const { status, text } = await browser.follow(consent);
        expect(status).to.equal(200);
        expect(text).to.include('Authorize</button>');
        expect(text).not.to.include(payload);
        expect(text).to.include(`App ${escaped}`);
        expect(text).to.include(`Words ${escaped}`);
        expect(text).to.include(`https://xss.example.test/${escaped}`);
      });
    }
  });
});
