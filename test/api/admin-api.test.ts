import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { recordAudit } from '../../src/db/audit.js';
import { requireUserById, setSiteAdmin } from '../../src/services/admin.js';
import { ADMIN_SCOPE_REFUSED } from '../../src/services/access-tokens.js';
import { addMember } from '../../src/services/groups.js';
import { PERSONAL_TOKEN_SCOPES } from '../../src/vocabulary.js';
import { call, expectApiError, type ApiResponse } from '../helpers/api.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { Browser, signIn } from '../helpers/browser.js';
import { idp as cli, json, refusal } from '../helpers/cli.js';
import { groupAccess, makeGroup, makeUser, personalToken, type TestUser } from '../helpers/factories.js';
import { fieldError, fillForm } from '../helpers/html.js';

const CLI = { userId: 0, ip: null, admin: true };
const unique = () => randomBytes(4).toString('hex');
const TOKENS = '/account/settings/tokens';
const adminLabel = `admin ${PERSONAL_TOKEN_SCOPES.admin}`;
const readOnlyLabel = `groups:read-only ${PERSONAL_TOKEN_SCOPES['groups:read-only']}`;

/** The keys every audit event has, in the API and in the downloads alike. */
const EVENT_KEYS = ['action', 'actionText', 'actor', 'actorApplication', 'details', 'id', 'ip', 'target', 'time'];

function expectScopeRefusal(res: ApiResponse, scope: string): void {
  expectApiError(res, 403, 'insufficient_scope');
  expect(res.headers.get('www-authenticate')).to.match(new RegExp(`^Bearer realm="[^"]+", resource_metadata="[^"]+", error="insufficient_scope", scope="${scope}"$`));
}

/** The NDJSON lines of a download, each parsed. */
function ndjson(text: string): Array<Record<string, unknown>> {
  expect(text.endsWith('\n') || text === '', 'each line ends with a newline').to.equal(true);
  return text.split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** The href of the page's Download link. */
function downloadHref(html: string): string {
  const href = /<a [^>]*href="([^"]+)"[^>]*data-testid="audit-download"/.exec(html)?.[1];
  expect(href, 'a Download link on the page').to.be.a('string');
  return href!;
}

describeEachProfile('admin API and audit export', (profile) => {
  const idp = useIdp(profile);
  let admin: TestUser;
  let adminToken: string;
  let plain: TestUser;

  before(async () => {
    admin = await makeUser(idp.db, { username: `root-${unique()}` });
    await setSiteAdmin(idp.db, CLI, admin, true);
    adminToken = await personalToken(idp.db, admin.id, { scopes: ['admin'] });
    plain = await makeUser(idp.db);
  });

  describe('the admin scope', () => {
    it('is made only for a site administrator: the service refuses it to anyone else, naming scopes', async () => {
      const refused = await personalToken(idp.db, plain.id, { scopes: ['admin'] }).then(() => 'made', (err: Error & { field?: string }) => err.message);
      expect(refused).to.equal(ADMIN_SCOPE_REFUSED);
      expect(await personalToken(idp.db, admin.id, { scopes: ['groups:read-only', 'admin'] })).to.match(/^ha_/);
    });

    it('is offered on the Access tokens page to administrators only; a forged one is a field error; an administrator makes one by the form', async () => {
      const person = await signIn(idp.url, plain);
      const theirs = await person.get(TOKENS).expect(200);
      expect(theirs.text).not.to.include('value="admin"');
      // The form as filled, plus the scope the page did not offer.
      const { action, fields } = fillForm(theirs.text, `${TOKENS}/new`, { 'Token name': 'forged', [readOnlyLabel]: 'checked' });
      fields.append('scopes', 'admin');
      const forged = await person.request(new URL(action, theirs.url), { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: fields.toString() });
      expect(forged.status).to.equal(400);
      expect(fieldError(forged.text, 'scopes')).to.equal('Scopes may include admin only for a site administrator');
      expect(await idp.db('personal_access_tokens').where({ user_id: plain.id, name: 'forged' }).first()).to.equal(undefined);

      const site = await signIn(idp.url, admin);
      const mine = await site.get(TOKENS).expect(200);
      await site.fill(mine, `${TOKENS}/new`, { 'Token name': 'admin by form', [adminLabel]: 'checked' }).expect(302);
      const shown = await site.get(TOKENS).expect(200);
      const token = /data-testid="new-token"[^>]*>([^<]*)</.exec(shown.text)?.[1]?.trim();
      expect(token).to.match(/^ha_/);
      const res = await call(idp, '/apis/v2/admin/users', { token: token! });
      expect(res.status, res.text).to.equal(200);
    });

    it('is made by the CLI for an administrator, and refused to anyone else naming --scope', async function () {
      this.timeout(60_000);
      const made = json(await cli(idp.database.url, ['token', 'create', '--user', admin.username, '--name', 'cli admin', '--scope', 'admin', '--json']));
      expect(made.scopes).to.deep.equal(['admin']);
      expect((await call(idp, '/apis/v2/admin/users', { token: String(made.token) })).status).to.equal(200);
      expect(refusal(await cli(idp.database.url, ['token', 'create', '--user', plain.username, '--name', 'x', '--scope', 'admin']))).to.match(/^idp: --scope: scopes may include admin only for a site administrator$/);
    });

    it('refuses a token without admin (403 insufficient_scope with a challenge), and an admin token whose owner is no longer an administrator (403)', async () => {
      const theirs = await personalToken(idp.db, plain.id, { scopes: ['groups:read-write'] });
      for (const [method, path] of [['GET', '/admin/users'], ['POST', `/admin/users/${plain.id}/disable`], ['POST', `/admin/users/${plain.id}/enable`], ['GET', '/admin/audit-events']] as const) {
        expectScopeRefusal(await call(idp, `/apis/v2${path}`, { token: theirs, method }), 'admin');
      }
      // An administrator's own token without the scope.
      expectScopeRefusal(await call(idp, '/apis/v2/admin/users', { token: await personalToken(idp.db, admin.id, { scopes: ['groups:read-write'] }) }), 'admin');

      const former = await makeUser(idp.db);
      await setSiteAdmin(idp.db, CLI, former, true);
      const token = await personalToken(idp.db, former.id, { scopes: ['admin'] });
      expect((await call(idp, '/apis/v2/admin/users', { token })).status).to.equal(200);
      await setSiteAdmin(idp.db, CLI, await requireUserById(idp.db, former.id), false);
      const res = await call(idp, '/apis/v2/admin/users', { token });
      expectApiError(res, 403, 'forbidden');
      expect(res.body.error_description).to.include('not a site administrator');
      expectApiError(await call(idp, `/apis/v2/admin/users/${plain.id}/disable`, { token, method: 'POST' }), 403, 'forbidden');
      expect((await idp.db('users').where({ id: plain.id }).first()).disabled_at).to.equal(null);
      // The admin scope opens nothing else.
      expectScopeRefusal(await call(idp, '/apis/v2/groups', { token: adminToken }), 'groups:read-only');
    });
  });

  describe('GET /admin/users', () => {
    it('searches, and pages with a Link header that keeps q', async () => {
      const tag = unique();
      const made = [];
      for (let i = 0; i < 3; i += 1) made.push(await makeUser(idp.db, { username: `find-${tag}-${i}` }));
      const first = await call(idp, '/apis/v2/admin/users', { token: adminToken, query: { q: `FIND-${tag}`, pageSize: '2' } });
      expect(first.status, first.text).to.equal(200);
      expect(first.body.data.total).to.equal(3);
      expect(first.body.data.items.map((u: { username: string }) => u.username)).to.deep.equal([made[0]!.username, made[1]!.username]);
      expect(first.body.data.items[0]).to.deep.include({ id: made[0]!.id, email: made[0]!.email, admin: false, disabledAt: null });
      expect(first.body.data.items[0]).not.to.have.property('password_hash');
      const next = /<([^>]+)>; rel="next"/.exec(first.headers.get('link') ?? '')?.[1];
      expect(next).to.include(`q=FIND-${tag}`);
      const second = await call(idp, new URL(next!).pathname + new URL(next!).search, { token: adminToken });
      expect(second.body.data.items.map((u: { username: string }) => u.username)).to.deep.equal([made[2]!.username]);
      expect(second.body.pageNumber).to.equal(2);

      expectApiError(await call(idp, '/apis/v2/admin/users', { token: adminToken, query: { pageSize: '0' } }), 400, 'invalid_request');
      const long = await call(idp, '/apis/v2/admin/users', { token: adminToken, query: { q: 'x'.repeat(101) } });
      expectApiError(long, 400, 'invalid_request');
      expect(long.body.error_description).to.match(/^q /);
    });
  });

  describe('POST /admin/users/{id}/disable and /enable', () => {
    it('does what the Admin pages do: sessions end, tokens revoked, audited with the administrator as actor', async () => {
      const target = await makeUser(idp.db);
      const theirToken = await personalToken(idp.db, target.id);
      const browser: Browser = await signIn(idp.url, target);
      await browser.get('/account/settings/profile').expect(200);
      expect((await call(idp, '/apis/v2/user', { token: theirToken })).status).to.equal(200);

      const disabled = await call(idp, `/apis/v2/admin/users/${target.id}/disable`, { token: adminToken, method: 'POST' });
      expect(disabled.status, disabled.text).to.equal(200);
      expect(disabled.body.changed).to.equal(true);
      expect(disabled.body.data).to.include({ id: target.id, username: target.username });
      expect(disabled.body.data.disabledAt).to.be.a('string');
      expect((await call(idp, '/apis/v2/user', { token: theirToken })).status).to.equal(401);
      const after = await browser.get('/account/settings/profile');
      expect(after.status).to.equal(302);
      expect(after.headers.get('location')).to.match(/^\/login/);

      const again = await call(idp, `/apis/v2/admin/users/${target.id}/disable`, { token: adminToken, method: 'POST' });
      expect(again.body.changed).to.equal(false);

      const enabled = await call(idp, `/apis/v2/admin/users/${target.id}/enable`, { token: adminToken, method: 'POST' });
      expect(enabled.status, enabled.text).to.equal(200);
      expect(enabled.body).to.deep.include({ changed: true });
      expect(enabled.body.data.disabledAt).to.equal(null);
      expect((await call(idp, `/apis/v2/admin/users/${target.id}/enable`, { token: adminToken, method: 'POST' })).body.changed).to.equal(false);
      // What disabling revoked stays revoked.
      expect((await call(idp, '/apis/v2/user', { token: theirToken })).status).to.equal(401);

      const events = await call(idp, '/apis/v2/admin/audit-events', { token: adminToken, query: { action: 'user.disable' } });
      const row = events.body.data.items.find((e: { target: string }) => e.target === target.username);
      expect(row).to.deep.include({ actor: admin.username, action: 'user.disable', actionText: 'Account disabled', target: target.username });
    });

    it('answers 404 for an unknown user, 400 naming id for a bad one, and 409 for the caller\'s own account', async () => {
      expectApiError(await call(idp, '/apis/v2/admin/users/2147483647/disable', { token: adminToken, method: 'POST' }), 404, 'not_found');
      const bad = await call(idp, '/apis/v2/admin/users/abc/enable', { token: adminToken, method: 'POST' });
      expectApiError(bad, 400, 'invalid_request');
      expect(bad.body.error_description).to.match(/^id /);
      expectApiError(await call(idp, `/apis/v2/admin/users/${admin.id}/disable`, { token: adminToken, method: 'POST' }), 409, 'conflict');
    });
  });

  describe('GET /admin/audit-events', () => {
    it('filters by action and time, pages, and refuses a since that is not RFC 3339 naming it', async () => {
      const subject = await makeUser(idp.db);
      const before = new Date().toISOString();
      await setSiteAdmin(idp.db, CLI, subject, true);
      await setSiteAdmin(idp.db, CLI, await requireUserById(idp.db, subject.id), false);
      const all = await call(idp, '/apis/v2/admin/audit-events', { token: adminToken, query: { since: before } });
      expect(all.status, all.text).to.equal(200);
      const mine = all.body.data.items.filter((e: { target: string }) => e.target === subject.username);
      expect(mine.map((e: { action: string }) => e.action)).to.deep.equal(['user.admin.revoke', 'user.admin.grant']);
      expect(Object.keys(mine[0]).sort()).to.deep.equal(EVENT_KEYS);
      expect(mine[0]).to.deep.include({ actor: null, details: { via: 'cli' }, actionText: 'No longer a site administrator' });

      const granted = await call(idp, '/apis/v2/admin/audit-events', { token: adminToken, query: { since: before, action: 'user.admin.grant' } });
      expect(granted.body.data.items.every((e: { action: string }) => e.action === 'user.admin.grant')).to.equal(true);
      expect(granted.body.data.items.some((e: { target: string }) => e.target === subject.username)).to.equal(true);
      // An offset says the same instant; `until` is exclusive.
      const earlier = await call(idp, '/apis/v2/admin/audit-events', { token: adminToken, query: { until: before.replace('Z', '+00:00') } });
      expect(earlier.body.data.items.some((e: { target: string }) => e.target === subject.username)).to.equal(false);

      const paged = await call(idp, '/apis/v2/admin/audit-events', { token: adminToken, query: { since: before, pageSize: '1', action: 'user.admin.revoke' } });
      expect(paged.body.pageSize).to.equal(1);
      expect(paged.headers.get('link')).to.include('action=user.admin.revoke').and.include(`since=${encodeURIComponent(before)}`);

      for (const [name, value] of [['since', 'yesterday'], ['since', '2025-02-30T00:00:00Z'], ['until', '2025-01-01'], ['action', 'DROP TABLE']]) {
        const res = await call(idp, '/apis/v2/admin/audit-events', { token: adminToken, query: { [name!]: value! } });
        expectApiError(res, 400, 'invalid_request');
        expect(res.body.error_description).to.match(new RegExp(`^${name} `));
      }
    });
  });

  describe('GET /groups/{id}/audit-events', () => {
    it('answers owners and maintainers with the group\'s log, filtered and paged; a member 403, an outsider 404', async () => {
      const owner = await makeUser(idp.db);
      const group = await makeGroup(idp.db, owner.id);
      const maintainer = await makeUser(idp.db);
      const member = await makeUser(idp.db);
      const access = await groupAccess(idp.db, owner.id, group.id);
      await addMember(idp.db, access, { user: maintainer.username, role: 'maintainer' });
      await addMember(idp.db, access, { user: member.username, role: 'member' });
      const path = `/apis/v2/groups/${group.id}/audit-events`;

      for (const who of [owner, maintainer]) {
        const res = await call(idp, path, { token: await personalToken(idp.db, who.id) });
        expect(res.status, res.text).to.equal(200);
        expect(res.body.data.total).to.equal(3);
        expect(res.body.data.items.map((e: { action: string }) => e.action)).to.deep.equal(['member.add', 'member.add', 'group.create']);
        expect(Object.keys(res.body.data.items[0]).sort()).to.deep.equal(EVENT_KEYS);
        expect(res.body.data.items[0]).to.deep.include({ actor: owner.username, target: member.username, actionText: 'Member added' });
      }
      const token = await personalToken(idp.db, owner.id);
      const added = await call(idp, path, { token, query: { action: 'member.add', pageSize: '1', pageNumber: '2' } });
      expect(added.body.data.total).to.equal(2);
      expect(added.body.data.items.map((e: { target: string }) => e.target)).to.deep.equal([maintainer.username]);
      expect((await call(idp, path, { token, query: { since: '2999-01-01T00:00:00Z' } })).body.data.total).to.equal(0);
      const bad = await call(idp, path, { token, query: { since: '1 hour ago' } });
      expectApiError(bad, 400, 'invalid_request');
      expect(bad.body.error_description).to.match(/^since must be a date and time of RFC 3339/);

      expectApiError(await call(idp, path, { token: await personalToken(idp.db, member.id) }), 403, 'forbidden');
      expectApiError(await call(idp, path, { token: await personalToken(idp.db, plain.id) }), 404, 'not_found');
      expectApiError(await call(idp, path, { token: adminToken }), 403, 'insufficient_scope');
    });
  });

  describe('Download on the Audit log pages', () => {
    it('gives the group\'s whole log as NDJSON through the page\'s own link, past one batch, in the API\'s event shape', async () => {
      const owner = await makeUser(idp.db);
      const group = await makeGroup(idp.db, owner.id);
      // More rows than one batch of the export reads (500), newest first with none repeated.
      const at = new Date(Date.now() - 60_000).toISOString();
      await idp.db.batchInsert('audit_events', Array.from({ length: 620 }, (_, i) => ({
        group_id: group.id, user_id: null, actor_id: owner.id, action: 'group.update', target: `bulk-${i}`, details: '{}', ip: '192.0.2.1', created_at: at,
      })), 100);
      await recordAudit(idp.db, { groupId: group.id, actorId: owner.id, action: 'member.remove', target: 'last', ip: null }, new Date().toISOString());

      const browser = await signIn(idp.url, owner);
      const page = await browser.get(`/groups/${group.path}/settings/audit`).expect(200);
      const download = await browser.get(downloadHref(page.text)).expect(200);
      expect(download.headers.get('content-type')).to.match(/^application\/x-ndjson/);
      expect(download.headers.get('content-disposition')).to.match(/^attachment; filename="audit-[^"]+\.ndjson"$/);
      const events = ndjson(download.text);
      expect(events).to.have.length(622);
      const ids = events.map((e) => e.id as number);
      expect(new Set(ids).size).to.equal(ids.length);
      expect([...ids].sort((a, b) => b - a)).to.deep.equal(ids);
      expect(events[0]).to.deep.include({ action: 'member.remove', target: 'last', actor: owner.username });
      expect(events.at(-1)).to.deep.include({ action: 'group.create' });

      const api = await call(idp, `/apis/v2/groups/${group.id}/audit-events`, { token: await personalToken(idp.db, owner.id), query: { pageSize: '50' } });
      expect(events.slice(0, 50)).to.deep.equal(api.body.data.items);

      // A member may not read the log, nor download it.
      const member = await makeUser(idp.db);
      await addMember(idp.db, await groupAccess(idp.db, owner.id, group.id), { user: member.username, role: 'member' });
      const theirs = await signIn(idp.url, member);
      expect((await theirs.get(downloadHref(page.text))).status).to.be.oneOf([403, 404]);
    });

    it('says Download and the admin scope in the page\'s language', async () => {
      const owner = await makeUser(idp.db);
      const group = await makeGroup(idp.db, owner.id);
      const ja = await signIn(new Browser(idp.url, { headers: { 'accept-language': 'ja' } }), owner);
      expect((await ja.get(`/groups/${group.path}/settings/audit`).expect(200)).text).to.include('>ダウンロード (NDJSON)</a>');
      const de = await signIn(new Browser(idp.url, { headers: { 'accept-language': 'de' } }), admin);
      expect((await de.get('/admin/audit').expect(200)).text).to.include('>Herunterladen (NDJSON)</a>');
      const tokens = (await de.get(TOKENS).expect(200)).text;
      expect(tokens).to.include('Die Website verwalten');
      const person = await signIn(new Browser(idp.url, { headers: { 'accept-language': 'de' } }), plain);
      const page = await person.get(TOKENS).expect(200);
      const forged = fillForm(page.text, `${TOKENS}/new`, { 'Token-Name': 'x' });
      forged.fields.append('scopes', 'admin');
      const res = await person.request(new URL(forged.action, page.url), { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: forged.fields.toString() });
      expect(fieldError(res.text, 'scopes')).to.equal('Der Bereich admin ist nur für Administratoren der Website möglich');
    });

    it('gives the site log as NDJSON through the Admin audit log page\'s link, to administrators only', async () => {
      const subject = await makeUser(idp.db);
      await setSiteAdmin(idp.db, CLI, subject, true);
      const site = await signIn(idp.url, admin);
      const page = await site.get('/admin/audit').expect(200);
      const href = downloadHref(page.text);
      const download = await site.get(href).expect(200);
      expect(download.headers.get('content-type')).to.match(/^application\/x-ndjson/);
      expect(download.headers.get('content-disposition')).to.match(/^attachment; filename="audit-site\.ndjson"$/);
      const events = ndjson(download.text);
      expect(events[0]).to.deep.include({ action: 'user.admin.grant', target: subject.username, actor: null, details: { via: 'cli' } });
      const api = await call(idp, '/apis/v2/admin/audit-events', { token: adminToken, query: { pageSize: '50' } });
      expect(events.slice(0, api.body.data.items.length)).to.deep.equal(api.body.data.items);

      const person = await signIn(idp.url, plain);
      expect((await person.get(href)).status).to.equal(404);
    });
  });
});
