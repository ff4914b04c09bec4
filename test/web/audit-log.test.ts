import { expect } from 'chai';
import { addMember } from '../../src/services/groups.js';
import { call } from '../helpers/api.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { signIn, type Browser, type Page } from '../helpers/browser.js';
import { groupAccess, makeApp, makeGroup, makeUser, personalToken, type TestUser } from '../helpers/factories.js';
import { filled, formsOf, type PageForm } from '../helpers/html.js';

/** What the audit logs record, and what they leave out: a save that changes nothing, a member who deletes their account. */
describeEachProfile('audit log', (profile) => {
  const idp = useIdp(profile);

  const auditRows = (groupId: number) =>
    idp.db('audit_events').where({ group_id: groupId }).orderBy('id').select('action', 'target', 'details', 'actor_deleted') as Promise<
      Array<{ action: string; target: string; details: string; actor_deleted: boolean | number }>
    >;
  const updatedAt = async (table: string, id: number) => String(((await idp.db(table).where({ id }).first('updated_at')) as { updated_at: unknown }).updated_at);

  /** The page's form that posts to exactly `action`, as the page wrote it. */
  function formTo(page: Page, action: string): PageForm {
    const form = formsOf(page.text, action).find((f) => f.action === action);
    if (!form) throw new Error(`no form posting to ${action} on ${page.url.pathname}`);
    return form;
  }

  async function ownerWithGroup() {
    const owner = await makeUser(idp.db);
    const group = await makeGroup(idp.db, owner.id);
    return { owner, group, client: await signIn(idp.url, owner) };
  }

  /** Sends the page's form untouched, the way a person presses Save without typing anything. */
  async function saveUntouched(client: Browser, path: string, action = path): Promise<Page> {
    const page = await client.get(path).expect(200);
    return client.postForm(action, formTo(page, action).fields).expect(302);
  }

  describe('a save that changes nothing', () => {
    it('group settings: writes no audit row, keeps updatedAt, and says Saved as usual', async () => {
      const { group, client } = await ownerWithGroup();
      const path = `/groups/${group.path}/settings`;
      const [before, at] = [await auditRows(group.id), await updatedAt('groups', group.id)];
      const saved = await saveUntouched(client, path);
      expect(saved.headers.get('location')).to.equal(`${path}?notice=saved`);
      expect(await auditRows(group.id)).to.deep.equal(before);
      expect(await updatedAt('groups', group.id)).to.equal(at);
      // A real change is still recorded, once.
      const page = await client.get(path).expect(200);
      await client.postForm(path, filled(formTo(page, path), { name: 'Renamed' })).expect(302);
      expect((await auditRows(group.id)).slice(before.length).map((r) => r.action)).to.deep.equal(['group.update']);
    });

    it('application settings: writes no audit row and keeps updatedAt', async () => {
      const { owner, group, client } = await ownerWithGroup();
      const app = await makeApp(idp.db, owner.id, group.id);
      const path = `/groups/${group.path}/settings/developer/apps/${app.clientId}`;
      const appId = Number(((await idp.db('oauth_apps').where({ client_id: app.clientId }).first('id')) as { id: number }).id);
      const [before, at] = [await auditRows(group.id), await updatedAt('oauth_apps', appId)];
      const saved = await saveUntouched(client, path);
      expect(saved.headers.get('location')).to.equal(`${path}?notice=updated`);
      expect(await auditRows(group.id)).to.deep.equal(before);
      expect(await updatedAt('oauth_apps', appId)).to.equal(at);
    });

    it('a member given the role they have: writes no audit row', async () => {
      const { owner, group, client } = await ownerWithGroup();
      const member = await makeUser(idp.db);
      await addMember(idp.db, await groupAccess(idp.db, owner.id, group.id), { user: member.username, role: 'maintainer' });
      const before = await auditRows(group.id);
      // The Members page's role picker, sent with the role it shows.
      await saveUntouched(client, `/groups/${group.path}/settings/members`, `/groups/${group.path}/settings/members/${member.id}/role`);
      expect(await auditRows(group.id)).to.deep.equal(before);
    });

    it('API PATCH of a group or an application: writes no audit row and keeps updatedAt', async () => {
      const { owner, group } = await ownerWithGroup();
      const app = await makeApp(idp.db, owner.id, group.id);
      const token = await personalToken(idp.db, owner.id, { scopes: ['groups:read-write'] });
      const patch = (path: string, body: unknown) =>
        call(idp, `/apis/v2${path}`, { token, method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const before = await auditRows(group.id);
      const groupRead = (await call(idp, `/apis/v2/groups/${group.id}`, { token })).body.data;
      const appRead = (await call(idp, `/apis/v2/oauth-apps/${app.clientId}`, { token })).body.data;

      for (const body of [{}, { name: groupRead.name, description: groupRead.description }]) {
        const res = await patch(`/groups/${group.id}`, body);
        expect(res.status, res.text).to.equal(200);
        expect(res.body.data.updatedAt).to.equal(groupRead.updatedAt);
      }
      for (const body of [{}, { name: appRead.name, callbackURL: appRead.callbackURL }]) {
        const res = await patch(`/oauth-apps/${app.clientId}`, body);
        expect(res.status, res.text).to.equal(200);
        expect(res.body.data.updatedAt).to.equal(appRead.updatedAt);
      }
      expect(await auditRows(group.id)).to.deep.equal(before);
    });
  });

  describe('a member who deletes their account', () => {
    async function deleteAccount(user: TestUser) {
      const client = await signIn(idp.url, user);
      const path = '/account/settings/delete';
      const page = await client.get(path).expect(200);
      await client.postForm(path, filled(formTo(page, path), { password: user.password })).expect(302, '/account/deleted');
    }

    it('leaves a "Member removed" row, reason account deleted, in every group they were in', async () => {
      const { owner, group, client } = await ownerWithGroup();
      const other = await makeGroup(idp.db, owner.id);
      const leaver = await makeUser(idp.db);
      await addMember(idp.db, await groupAccess(idp.db, owner.id, group.id), { user: leaver.username, role: 'maintainer' });
      await addMember(idp.db, await groupAccess(idp.db, owner.id, other.id), { user: leaver.username, role: 'member' });

      await deleteAccount(leaver);

      for (const [g, role] of [[group, 'maintainer'], [other, 'member']] as const) {
        const last = (await auditRows(g.id)).at(-1)!;
        // They are the actor: shown as a deleted user, as their other events are.
        expect(last).to.include({ action: 'member.remove', target: leaver.username });
        expect(Boolean(last.actor_deleted)).to.equal(true);
        expect(JSON.parse(last.details)).to.deep.equal({ from: role, reason: 'account deleted' });
      }
      const log = await client.get(`/groups/${group.path}/settings/audit`).expect(200);
      const [row] = [...log.text.matchAll(/<tr data-testid="audit-row">([\s\S]*?)<\/tr>/g)].map((m) => m[1]!.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ').trim());
      expect(row).to.include('Member removed').and.include(leaver.username).and.include('deleted user').and.include('reason: account deleted');
    });
  });
});
