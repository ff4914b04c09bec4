import { expect } from 'chai';
import { addMember, updateGroupSettings } from '../../src/services/groups.js';
import { call, expectApiError } from '../helpers/api.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { signIn, type Browser } from '../helpers/browser.js';
import { groupAccess, makeApp, makeGroup, makeUser, personalToken, type TestUser } from '../helpers/factories.js';
import { csrfFrom, fieldError, findOnceKey, formAction, unescapeHtml } from '../helpers/html.js';

type Group = Awaited<ReturnType<typeof makeGroup>>;

/** The ids of `GET /apis/v2/groups` (one page of 50) as the token sees them. */
async function listedIds(idp: { url: string }, token: string): Promise<number[]> {
  const res = await call(idp, '/apis/v2/groups', { token, query: { pageSize: '50' } });
  expect(res.status, res.text).to.equal(200);
  expect(res.body.data.total).to.equal(res.body.data.items.length);
  return res.body.data.items.map((g: { id: number }) => g.id);
}

describeEachProfile('fine-grained personal access tokens and groups’ lifetime caps', (profile) => {
  const idp = useIdp(profile);
  let user: TestUser;
  let a: Group;
  let b: Group;
  let c: Group;

  before(async () => {
    user = await makeUser(idp.db);
    a = await makeGroup(idp.db, user.id, { name: 'Alpha' });
    b = await makeGroup(idp.db, user.id, { name: 'Beta' });
    c = await makeGroup(idp.db, user.id, { name: 'Gamma' });
  });

  describe('a token limited to some groups (API)', () => {
    it('lists only its groups, reads them, and gets 404 for the user’s other groups as for a group of others', async () => {
      const limited = await personalToken(idp.db, user.id, { scopes: ['groups:read-write'], groups: [a.id, c.id] });
      const all = await personalToken(idp.db, user.id, { scopes: ['groups:read-write'] });
      expect(await listedIds(idp, limited)).to.deep.equal([a.id, c.id]);
      expect(await listedIds(idp, all)).to.deep.equal([a.id, b.id, c.id]);
      const filtered = await call(idp, '/apis/v2/groups', { token: limited, query: { filter: 'beta' } });
      expect(filtered.body.data).to.deep.equal({ total: 0, items: [] });

      expect((await call(idp, `/apis/v2/groups/${a.id}`, { token: limited })).status).to.equal(200);
      const other = await call(idp, `/apis/v2/groups/${b.id}`, { token: limited });
      expectApiError(other, 404, 'not_found');
      const stranger = await call(idp, '/apis/v2/groups/2147483647', { token: limited });
      expect(other.body.error_description).to.equal(stranger.body.error_description);

      // Group-scoped routes: the applications of a group, and an application by its client id.
      const app = await makeApp(idp.db, user.id, b.id);
      expectApiError(await call(idp, `/apis/v2/groups/${b.id}/oauth-apps`, { token: limited }), 404, 'not_found');
      expectApiError(await call(idp, `/apis/v2/oauth-apps/${app.clientId}`, { token: limited }), 404, 'not_found');
      expectApiError(await call(idp, `/apis/v2/groups/${b.id}`, { token: limited, method: 'DELETE' }), 404, 'not_found');
      expect((await call(idp, `/apis/v2/oauth-apps/${app.clientId}`, { token: all })).status).to.equal(200);
      expect((await call(idp, `/apis/v2/groups/${a.id}/oauth-apps`, { token: limited })).status).to.equal(200);
    });

    it('keeps its scopes: a read-only limited token cannot write in its own group', async () => {
      const token = await personalToken(idp.db, user.id, { scopes: ['groups:read-only'], groups: [a.id] });
      expectApiError(await call(idp, `/apis/v2/groups/${a.id}/oauth-apps`, { token }), 403, 'insufficient_scope');
    });

    it('reaches no group once its only group is gone, never all of them', async () => {
      const doomed = await makeGroup(idp.db, user.id);
      const token = await personalToken(idp.db, user.id, { groups: [doomed.id] });
      expect(await listedIds(idp, token)).to.deep.equal([doomed.id]);
      expect((await call(idp, `/apis/v2/groups/${doomed.id}`, { token: await personalToken(idp.db, user.id, { scopes: ['groups:read-write'] }), method: 'DELETE' })).status).to.equal(204);
      expect(await listedIds(idp, token)).to.deep.equal([]);
      expect((await call(idp, '/apis/v2/user', { token })).status).to.equal(200);
    });

    it('is refused with 400 naming groups, never a 500, when its group is deleted at the same moment', async () => {
      const doomed = await makeGroup(idp.db, user.id);
      const owner = await personalToken(idp.db, user.id, { scopes: ['groups:read-write'] });
      // Made one after another while the deletion runs, so that some fall between its steps.
      const deleting = call(idp, `/apis/v2/groups/${doomed.id}`, { token: owner, method: 'DELETE' });
      const made: Array<Promise<string>> = [];
      for (let i = 0; i < 40; i += 1) {
        made.push(personalToken(idp.db, user.id, { groups: [doomed.id] }).then(() => 'made', (err: Error) => err.message));
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
      const deleted = await deleting;
      expect(deleted.status, deleted.text).to.equal(204);
      for (const outcome of await Promise.all(made)) expect(outcome).to.match(/^made$|^groups must be groups you are a member of/);
      // Every token made before the deletion reaches no group now.
      expect(await idp.db('personal_token_groups').where({ group_id: doomed.id })).to.deep.equal([]);
    });

    it('cannot be limited to a group its user is not in', async () => {
      const other = await makeUser(idp.db);
      const foreign = await makeGroup(idp.db, other.id);
      let err: unknown;
      try {
        await personalToken(idp.db, user.id, { groups: [a.id, foreign.id] });
      } catch (e) {
        err = e;
      }
      expect(String((err as Error)?.message)).to.match(/^groups must be groups you are a member of/);
    });
  });

  describe('a group’s cap on the lifetime of personal access tokens (API)', () => {
    let owner: TestUser;
    let capped: Group;
    let ownerToken: string;

    before(async () => {
      owner = await makeUser(idp.db);
      capped = await makeGroup(idp.db, owner.id, { name: 'Capped' });
      await addMember(idp.db, await groupAccess(idp.db, owner.id, capped.id), { user: user.username, role: 'member' });
      ownerToken = await personalToken(idp.db, owner.id, { scopes: ['groups:read-write'], expiresInDays: 7 });
    });

    it('is set by an owner through PATCH, validated with an error naming the field, and shown on the group', async () => {
      for (const bad of [0, 366, 1.5, '30']) {
        const res = await call(idp, `/apis/v2/groups/${capped.id}`, { token: ownerToken, method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ personalTokenMaxLifetimeDays: bad }) });
        expectApiError(res, 400, 'invalid_request');
        expect(res.body.error_description).to.match(/^personalTokenMaxLifetimeDays /);
      }
      const memberToken = await personalToken(idp.db, user.id, { scopes: ['groups:read-write'], expiresInDays: 7 });
      const refused = await call(idp, `/apis/v2/groups/${capped.id}`, { token: memberToken, method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ personalTokenMaxLifetimeDays: 30 }) });
      expectApiError(refused, 403, 'forbidden');

      const res = await call(idp, `/apis/v2/groups/${capped.id}`, { token: ownerToken, method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ personalTokenMaxLifetimeDays: 30 }) });
      expect(res.status, res.text).to.equal(200);
      expect(res.body.data).to.include({ personalTokenMaxLifetimeDays: 30, name: 'Capped', role: 'owner' });
      const audit = await idp.db('audit_events').where({ group_id: capped.id, action: 'group.update' }).orderBy('id', 'desc').first();
      expect(JSON.parse(audit.details).changes).to.deep.equal({ personalTokenMaxLifetimeDays: { from: 'no limit', to: '30 days' } });
    });

    it('refuses a longer-lived or never-expiring token on the group’s routes with 403 naming the policy, which still works elsewhere', async () => {
      const month = await personalToken(idp.db, user.id, { expiresInDays: 30 });
      const quarter = await personalToken(idp.db, user.id, { expiresInDays: 90 });
      const forever = await personalToken(idp.db, user.id, { expiresInDays: null });
      expect((await call(idp, `/apis/v2/groups/${capped.id}`, { token: month })).status, 'exactly the cap').to.equal(200);
      expect(await listedIds(idp, month)).to.include(capped.id);
      for (const [token, lives] of [[quarter, 'lives 90 days'], [forever, 'never expires']] as const) {
        const res = await call(idp, `/apis/v2/groups/${capped.id}`, { token });
        expectApiError(res, 403, 'token_lifetime_exceeds_group_policy');
        expect(res.body.error_description).to.include('allows personal access tokens of at most 30 days').and.include(`this token ${lives}`);
        // Left out of the token's list; its other groups still answer.
        const ids = await listedIds(idp, token);
        expect(ids).not.to.include(capped.id);
        expect(ids).to.include.members([a.id, b.id, c.id]);
        expect((await call(idp, `/apis/v2/groups/${a.id}`, { token })).status).to.equal(200);
      }
    });

    it('is lifted by null: the never-expiring token reads the group again', async () => {
      const forever = await personalToken(idp.db, user.id, { expiresInDays: null });
      const res = await call(idp, `/apis/v2/groups/${capped.id}`, { token: ownerToken, method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ personalTokenMaxLifetimeDays: null }) });
      expect(res.body.data.personalTokenMaxLifetimeDays).to.equal(null);
      expect((await call(idp, `/apis/v2/groups/${capped.id}`, { token: forever })).status).to.equal(200);
      await updateGroupSettings(idp.db, await groupAccess(idp.db, owner.id, capped.id), { name: 'Capped', description: '', visibilityLevel: 'private', personalTokenMaxLifetimeDays: 30 });
    });
  });

  describe('pages', () => {
    let browser: Browser;
    before(async () => {
      browser = await signIn(idp.url, user);
    });

    async function tokensPage(): Promise<string> {
      return (await browser.get('/account/settings/tokens').expect(200)).text;
    }

    async function generate(fields: { name: string; groupAccess?: string; groups?: number[] }) {
      const html = await tokensPage();
      const body = new URLSearchParams({ _csrf: csrfFrom(html), _once: findOnceKey(html) ?? '', name: fields.name, scopes: 'groups:read-only', expiration: '30' });
      if (fields.groupAccess) body.set('groupAccess', fields.groupAccess);
      for (const id of fields.groups ?? []) body.append('groups', String(id));
      const res = await browser.request(formAction(html, '/account/settings/tokens'), { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: body.toString() });
      return res.status === 302 ? browser.follow(res) : res;
    }

    const shownToken = (html: string) => /data-testid="new-token"[^>]*>([^<]*)</.exec(html)?.[1]?.trim();
    const rowOf = (html: string, name: string) =>
      [...html.matchAll(/<tr data-testid="token-row"[^>]*>([\s\S]*?)<\/tr>/g)].map((m) => m[1]!).find((row) => row.includes(`>${name}<`));

    it('offers All my groups (chosen) or Only these groups with a checkbox per group', async () => {
      const html = await tokensPage();
      expect(html).to.match(/id="groupAccess-all" name="groupAccess" value="all" checked/);
      expect(html).to.include('Only these groups');
      for (const g of [a, b, c]) expect(html).to.include(`id="group-${g.id}" name="groups" value="${g.id}"`);
    });

    it('makes a token limited to the checked groups, shows the restriction in the list, and the API holds to it', async () => {
      const page = await generate({ name: 'only-beta', groupAccess: 'selected', groups: [b.id] });
      const token = shownToken(page.text)!;
      expect(await listedIds(idp, token)).to.deep.equal([b.id]);
      expect(unescapeHtml(rowOf(page.text, 'only-beta')!)).to.include('Only Beta');
      const everywhere = await generate({ name: 'everywhere' });
      expect(rowOf(everywhere.text, 'everywhere')).to.include('All my groups');
    });

    it('refuses Only these groups with none checked, next to the field', async () => {
      const res = await generate({ name: 'nothing', groupAccess: 'selected' });
      expect(res.status).to.equal(400);
      expect(fieldError(res.text, 'groups')).to.equal('Groups must name at least one group');
      expect(res.text).to.match(/id="groupAccess-selected" name="groupAccess" value="selected" checked/);
    });

    it('refuses a token for Only these groups that a checked group’s cap is shorter than, naming the group under Expiration', async () => {
      const weekly = await makeGroup(idp.db, user.id, { name: 'Weekly' });
      await updateGroupSettings(idp.db, await groupAccess(idp.db, user.id, weekly.id), { name: 'Weekly', description: '', visibilityLevel: 'private', personalTokenMaxLifetimeDays: 7 });
      // The page gives each capped group's checkbox its cap, for the note under Expiration.
      expect(await tokensPage()).to.include(`id="group-${weekly.id}" name="groups" value="${weekly.id}" data-group-name="Weekly" data-max-lifetime-days="7"`);
      const res = await generate({ name: 'too-long', groupAccess: 'selected', groups: [a.id, weekly.id] });
      expect(res.status).to.equal(400);
      expect(unescapeHtml(fieldError(res.text, 'expiration')!)).to.equal('Expiration must be within the chosen groups\' limits: Weekly limits tokens to 7 days');
      expect(await idp.db('personal_access_tokens').where({ user_id: user.id, name: 'too-long' }).first()).to.equal(undefined);
      // All my groups stays allowed: the token works everywhere but there.
      expect((await generate({ name: 'everywhere-but-weekly' })).status).to.equal(200);
    });

    it('lets an owner set and clear the cap in the group’s General settings, in words in its audit log', async () => {
      const owned = await makeGroup(idp.db, user.id, { name: 'Policy page' });
      const settings = `/groups/${owned.path}/settings`;
      const html = (await browser.get(settings).expect(200)).text;
      expect(html).to.include('Maximum lifetime of personal access tokens');
      const send = (days: string) => browser.submit(settings, { name: 'Policy page', description: '', visibilityLevel: 'private', personalTokenMaxLifetimeDays: days });

      const bad = await send('400');
      expect(bad.status).to.equal(400);
      expect(fieldError(bad.text, 'personalTokenMaxLifetimeDays')).to.equal('Maximum lifetime of personal access tokens must be a whole number of days from 1 to 365, or empty for no limit');
      await send('14').expect(302);
      expect((await browser.get(settings).expect(200)).text).to.match(/id="personalTokenMaxLifetimeDays" name="personalTokenMaxLifetimeDays" type="text"\s*value="14"/);
      const month = await personalToken(idp.db, user.id, { expiresInDays: 30 });
      expectApiError(await call(idp, `/apis/v2/groups/${owned.id}`, { token: month }), 403, 'token_lifetime_exceeds_group_policy');
      await send('').expect(302);
      expect((await call(idp, `/apis/v2/groups/${owned.id}`, { token: month })).status).to.equal(200);

      const audit = unescapeHtml((await browser.get(`${settings}/audit`).expect(200)).text);
      expect(audit).to.include('Maximum lifetime of personal access tokens: no limit → 14 days');
      expect(audit).to.include('Maximum lifetime of personal access tokens: 14 days → no limit');
    });
  });
});
