import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { findRole, type GroupRow } from '../../src/db/groups.js';
import { addMember } from '../../src/services/groups.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { Browser, signIn, visit } from '../helpers/browser.js';
import { groupAccess, joinGroup, makeUser, signedInOwner, type TestUser } from '../helpers/factories.js';
import { errorMessage, fieldError, findOnceKey, inputValue } from '../helpers/html.js';

const unique = () => randomBytes(4).toString('hex');
const SCRIPT = '<script>alert(1)</script>';

describeEachProfile('groups pages', (profile) => {
  const idp = useIdp(profile);

  /** An owner signed in, their group, and (optionally) other members with their roles. */
  const groupWithOwner = () => signedInOwner(idp);

  const join = (group: GroupRow, owner: TestUser, role: 'owner' | 'maintainer' | 'member') => joinGroup(idp.db, group, owner, role);

  const rolesOf = async (groupId: number) =>
    Object.fromEntries(
      ((await idp.db('memberships').where({ group_id: groupId }).select('user_id', 'role')) as Array<{ user_id: number; role: string }>).map(
        (m) => [m.user_id, m.role],
      ),
    );
  const auditCount = async (groupId: number) =>
    Number(((await idp.db('audit_events').where({ group_id: groupId }).count({ n: '*' }).first()) as { n: number | string }).n);
  const groupRow = async (groupId: number) => (await idp.db('groups').where({ id: groupId }).first()) as GroupRow;

  describe('groups list and new group', () => {
    it('lists my groups with my role and a New group button', async () => {
      const { group, client } = await groupWithOwner();
      const res = await client.get('/groups').expect(200);
      expect(res.text).to.include(`href="/groups/${group.path}"`);
      expect(res.text).to.include('<span class="badge">owner</span>');
      expect(res.text).to.include('href="/groups/new"');
    });

    it('creates one group of one form sent again, or 16 times at once, and shows it', async () => {
      const user = await makeUser(idp.db);
      const client = await signIn(idp.url, user);
      const form = await client.get('/groups/new').expect(200);
      const path = `once-${unique()}`;
      const fields = { _once: findOnceKey(form.text)!, name: 'Once', path, description: '', visibilityLevel: 'private' };
      const answers = await Promise.all(Array.from({ length: 16 }, () => client.submit('/groups/new', fields)));
      expect(answers.map((a) => a.headers.get('location')).sort()).to.deep.equal([
        `/groups/${path}?notice=created`,
        ...Array(15).fill(`/groups/${path}?notice=group-repeated`),
      ].sort());
      await client.submit('/groups/new', fields).expect(302, `/groups/${path}?notice=group-repeated`);
      const count = async (table: string, where: Record<string, unknown>) =>
        Number(((await idp.db(table).where(where).count({ n: '*' }).first()) as { n: number | string }).n);
      expect(await count('groups', { path })).to.equal(1);
      expect(await count('audit_events', { action: 'group.create', target: path })).to.equal(1);
    });

    it('shows every bad field of the new group form at once, in the labels’ words', async () => {
      const client = await signIn(idp.url, await makeUser(idp.db));
      await client.get('/groups/new').expect(200);
      const res = await client.submit('/groups/new', { name: '', path: 'A B', description: 'd'.repeat(401), visibilityLevel: 'secret' }).expect(400);
      expect(fieldError(res.text, 'name')).to.equal('Name is required');
      expect(fieldError(res.text, 'path')).to.equal('Path may contain only lower-case letters, digits, "-", "_" and "."');
      expect(fieldError(res.text, 'description')).to.equal('Description must be at most 400 characters');
      expect(fieldError(res.text, 'visibilityLevel')).to.equal('Visibility must be private, internal or public');
    });

    it('shows the new group form with Name, Path, Description, Visibility and Create group', async () => {
      const client = await signIn(idp.url, await makeUser(idp.db));
      const res = await client.get('/groups/new').expect(200);
      for (const label of ['>Name<', '>Path<', '>Description<', '>Visibility<', 'Create group']) expect(res.text).to.include(label);
      expect(res.text).to.match(/<input type="radio" id="visibility-private" name="visibilityLevel" value="private"[^>]* checked>/);
      // Each level says who it is for, next to the choice.
      expect(res.text).to.include('Only members of the group.').and.include('Anyone signed in to Horizon ID.').and.include('Anyone, signed in or not.');
      // Path is suggested from the name by site.js, from the element around the path field.
      expect(res.text).to.include('data-path-from="name"');
    });

    it('creates a group whose creator is its owner and sees Settings', async () => {
      const user = await makeUser(idp.db);
      const client = await signIn(idp.url, user);
      const path = `team-${unique()}`;
      await client
        .submit('/groups/new', { name: 'The Team', path, description: 'We build things', visibilityLevel: 'internal' })
        .expect(302, `/groups/${path}?notice=created`);
      const page = await client.get(`/groups/${path}`).expect(200);
      expect(page.text).to.include('The Team');
      expect(page.text).to.include('We build things');
      expect(page.text).to.include('Internal');
      expect(page.text).to.include('data-testid="group-settings"');
      const group = (await idp.db('groups').where({ path }).first()) as GroupRow;
      expect(group.visibility_level).to.equal('internal');
      expect(await findRole(idp.db, group.id, user.id)).to.equal('owner');
    });

    it('re-shows the form with the error on the path field when the path is taken', async () => {
      const { group, client } = await groupWithOwner();
      const before = Number(((await idp.db('groups').count({ n: '*' }).first()) as { n: number | string }).n);
      const res = await client
        .submit('/groups/new', { name: 'Copycat', path: group.path, description: 'Typed text', visibilityLevel: 'public' })
        .expect(409);
      expect(fieldError(res.text, 'path')).to.include('already taken');
      expect(fieldError(res.text, 'name')).to.equal(undefined);
      expect(inputValue(res.text, 'name')).to.equal('Copycat');
      expect(inputValue(res.text, 'path')).to.equal(group.path);
      expect(res.text).to.include('>Typed text</textarea>');
      expect(res.text).to.match(/value="public"[^>]* checked>/);
      expect(Number(((await idp.db('groups').count({ n: '*' }).first()) as { n: number | string }).n)).to.equal(before);
    });

    it('re-shows the form with the rule on the path field when the path has upper-case letters or spaces', async () => {
      const client = await signIn(idp.url, await makeUser(idp.db));
      const res = await client.submit('/groups/new', { name: 'Bad', path: 'Bad Path', visibilityLevel: 'private' }).expect(400);
      expect(fieldError(res.text, 'path')).to.include('lower-case letters');
      expect(await idp.db('groups').where({ path: 'bad path' }).first()).to.equal(undefined);
    });

    it('re-shows the form with the error on the name field when the name is empty', async () => {
      const client = await signIn(idp.url, await makeUser(idp.db));
      const path = `noname-${unique()}`;
      const res = await client.submit('/groups/new', { name: '  ', path, visibilityLevel: 'private' }).expect(400);
      expect(fieldError(res.text, 'name')).to.equal('Name is required');
      expect(inputValue(res.text, 'path')).to.equal(path);
    });

    it('sends a signed-out visitor of /groups/new to the sign-in page', async () => {
      await new Browser(idp.url).get('/groups/new').expect(302, '/login?return_to=%2Fgroups%2Fnew');
    });
  });

  describe('group page', () => {
    it('shows a member the group and its members but no Settings', async () => {
      const { owner, group } = await groupWithOwner();
      const member = await join(group, owner, 'member');
      const res = await (await signIn(idp.url, member)).get(`/groups/${group.path}`).expect(200);
      expect(res.text).to.include(group.name);
      expect(res.text).to.include(`/${group.path}`);
      expect(res.text).to.include(owner.username);
      expect(res.text).to.include(member.username);
      expect(res.text).not.to.include('data-testid="group-settings"');
      expect(res.text).not.to.include(`/groups/${group.path}/settings`);
    });

    it('shows a maintainer Settings leading to Members, the first tab they may open', async () => {
      const { owner, group } = await groupWithOwner();
      const maintainer = await join(group, owner, 'maintainer');
      const res = await (await signIn(idp.url, maintainer)).get(`/groups/${group.path}`).expect(200);
      expect(res.text).to.match(new RegExp(`href="/groups/${group.path}/settings/members" data-testid="group-settings"`));
    });

    it('answers a non-member with a 404 page', async () => {
      const { group } = await groupWithOwner();
      const stranger = await signIn(idp.url, await makeUser(idp.db));
      const res = await stranger.get(`/groups/${group.path}`).expect(404);
      expect(res.text).not.to.include(group.name);
    });

    it('answers an unknown path with the same 404 page', async () => {
      const client = await signIn(idp.url, await makeUser(idp.db));
      const { group } = await groupWithOwner();
      const unknown = await client.get(`/groups/no-such-${unique()}`).expect(404);
      const hidden = await client.get(`/groups/${group.path}`).expect(404);
      expect(errorMessage(unknown.text)).to.equal(errorMessage(hidden.text));
    });

    it('answers a path no group could have with a 404 page', async () => {
      const client = await signIn(idp.url, await makeUser(idp.db));
      await client.get('/groups/%27--%20or%201=1').expect(404);
    });

    it('sends a signed-out visitor to the sign-in page with a way back', async () => {
      const { group } = await groupWithOwner();
      await new Browser(idp.url).get(`/groups/${group.path}`).expect(302, `/login?return_to=${encodeURIComponent(`/groups/${group.path}`)}`);
    });

    it('brings a visitor back to the group after signing in', async () => {
      const { owner, group } = await groupWithOwner();
      const client = await visit(idp.url, `/login?return_to=${encodeURIComponent(`/groups/${group.path}`)}`);
      await client
        .submit('/login', { login: owner.username, password: owner.password, return_to: `/groups/${group.path}` })
        .expect(302, `/groups/${group.path}`);
    });
  });

  describe('leaving a group', () => {
    for (const role of ['member', 'maintainer', 'owner'] as const) {
      it(`lets a ${role} leave from the group page, audited as them leaving, and sends them to their groups`, async () => {
        const { owner, group } = await groupWithOwner();
        const leaver = await join(group, owner, role);
        const client = await signIn(idp.url, leaver);
        const page = await client.get(`/groups/${group.path}`).expect(200);
        expect(page.text).to.match(/data-testid="leave-group" data-confirm="Leave /);
        await client.fill(page, `/groups/${group.path}/leave`).expect(302, '/groups?notice=left');
        expect(await findRole(idp.db, group.id, leaver.id)).to.equal(undefined);
        const left = await idp.db('audit_events').where({ group_id: group.id, action: 'member.leave' }).first('actor_id', 'target', 'details');
        expect(left).to.deep.include({ actor_id: leaver.id, target: leaver.username });
        expect(JSON.parse(left.details)).to.deep.equal({ from: role });
        const list = await client.get('/groups?notice=left').expect(200);
        expect(list.text).to.include('You left the group.');
        expect(list.text).not.to.include(`href="/groups/${group.path}"`);
        await client.get(`/groups/${group.path}`).expect(404);
        const log = await (await signIn(idp.url, owner)).get(`/groups/${group.path}/settings/audit`).expect(200);
        expect(log.text).to.match(new RegExp(`Left the group[\\s\\S]*?${leaver.username}`));
      });
    }

    it('shows the last owner the button disabled with the reason, and refuses it posted anyway (409, nothing changed)', async () => {
      const { owner, group, client } = await groupWithOwner();
      await join(group, owner, 'maintainer');
      const page = await client.get(`/groups/${group.path}`).expect(200);
      expect(page.text).to.match(/data-testid="leave-group"[^>]* disabled aria-describedby="leave-reason"/);
      expect(page.text).to.include('You are the last owner of this group: make another member an owner first, or delete the group.');
      const auditBefore = await auditCount(group.id);
      const refused = await client.fill(page, `/groups/${group.path}/leave`).expect(409);
      expect(errorMessage(refused.text)).to.equal(`Could not leave ${group.name}. You are the last owner of this group: make another member an owner first, or delete the group.`);
      expect(await findRole(idp.db, group.id, owner.id)).to.equal('owner');
      expect(await auditCount(group.id)).to.equal(auditBefore);
    });

    it('lets only one of two owners leaving at once go: the group keeps an owner', async () => {
      const { owner, group, client } = await groupWithOwner();
      const second = await join(group, owner, 'owner');
      const secondClient = await signIn(idp.url, second);
      const [first, other] = [await client.get(`/groups/${group.path}`).expect(200), await secondClient.get(`/groups/${group.path}`).expect(200)];
      const answers = await Promise.all([client.fill(first, `/groups/${group.path}/leave`), secondClient.fill(other, `/groups/${group.path}/leave`)]);
      expect(answers.map((a) => a.status).sort()).to.deep.equal([302, 409]);
      expect(Object.values(await rolesOf(group.id))).to.deep.equal(['owner']);
      expect(await idp.db('audit_events').where({ group_id: group.id, action: 'member.leave' }).count({ n: '*' }).first()).to.satisfy((row: { n: number | string }) => Number(row.n) === 1);
    });

    it('refuses leaving without a CSRF token and changes nothing', async () => {
      const { owner, group } = await groupWithOwner();
      const member = await join(group, owner, 'member');
      const client = await signIn(idp.url, member);
      await client.postForm(`/groups/${group.path}/leave`, {}).expect(403);
      expect(await findRole(idp.db, group.id, member.id)).to.equal('member');
    });
  });

  describe('settings', () => {
    const settingsPages = (path: string) => [
      `/groups/${path}/settings`,
      `/groups/${path}/settings/members`,
      `/groups/${path}/settings/developer`,
      `/groups/${path}/settings/audit`,
    ];

    it('shows the owner the sidebar General · Members · Developer · Audit log on every settings page, the page itself marked', async () => {
      const { group, client } = await groupWithOwner();
      for (const url of settingsPages(group.path)) {
        const res = await client.get(url).expect(200);
        expect(res.text).to.match(/aria-label="Group settings"[\s\S]*>General<[\s\S]*>Members<[\s\S]*>Developer<[\s\S]*>Audit log</);
        expect(res.text).to.include(`<a href="${url}" aria-current="page">`);
      }
    });

    /** The settings forms a member may not send; a maintainer neither (each touches settings or an owner). */
    const ownersOnlyPosts = (path: string, ids: { owner: number; actor: number; other: number }, outsider: string): Array<[string, Record<string, string>]> => [
      [`/groups/${path}/settings`, { name: 'Taken over', description: 'x', visibilityLevel: 'public' }],
      [`/groups/${path}/settings/members`, { user: outsider, role: 'owner' }],
      [`/groups/${path}/settings/members/${ids.actor}/role`, { role: 'owner' }],
      [`/groups/${path}/settings/members/${ids.other}/role`, { role: 'owner' }],
      [`/groups/${path}/settings/members/${ids.owner}/role`, { role: 'member' }],
      [`/groups/${path}/settings/members/${ids.owner}/remove`, {}],
    ];

    it('answers a member with 403 on every settings page', async () => {
      const { owner, group } = await groupWithOwner();
      const client = await signIn(idp.url, await join(group, owner, 'member'));
      for (const url of settingsPages(group.path)) {
        const res = await client.get(url);
        expect(res.status, url).to.equal(403);
        expect(res.text).not.to.include('Save changes');
      }
    });

    it('opens Members and Audit log to a maintainer, with only those in the sidebar, and answers 403 on General and Developer', async () => {
      const { owner, group } = await groupWithOwner();
      const client = await signIn(idp.url, await join(group, owner, 'maintainer'));
      const [general, members, developer, audit] = settingsPages(group.path);
      for (const url of [general!, developer!]) expect((await client.get(url)).status, url).to.equal(403);
      for (const url of [members!, audit!]) {
        const res = await client.get(url).expect(200);
        const sidebar = /<nav class="settings-nav"[\s\S]*?<\/nav>/.exec(res.text)?.[0] ?? '';
        expect(sidebar).to.match(/>Members<[\s\S]*>Audit log</);
        expect(sidebar).not.to.match(/>General<|>Developer</);
      }
    });

    for (const role of ['maintainer', 'member'] as const) {
      it(`answers a ${role} with 403 on every settings form that touches settings or an owner, and changes nothing`, async () => {
        const { owner, group } = await groupWithOwner();
        const other = await join(group, owner, 'member');
        const actor = await join(group, owner, role);
        const client = await signIn(idp.url, actor);
        const [rolesBefore, auditBefore, groupBefore] = [await rolesOf(group.id), await auditCount(group.id), await groupRow(group.id)];
        const outsider = await makeUser(idp.db);
        const posts = ownersOnlyPosts(group.path, { owner: owner.id, actor: actor.id, other: other.id }, outsider.username);
        if (role === 'member') {
          posts.push([`/groups/${group.path}/settings/members`, { user: outsider.username, role: 'member' }]);
          posts.push([`/groups/${group.path}/settings/members/${other.id}/remove`, {}]);
          posts.push([`/groups/${group.path}/settings/members/${other.id}/role`, { role: 'maintainer' }]);
        }
        for (const [url, fields] of posts) {
          const res = await client.submit(url, fields);
          expect(res.status, url).to.equal(403);
          expect(errorMessage(res.text), url).to.match(/^Only an owner/);
        }
        expect(await rolesOf(group.id)).to.deep.equal(rolesBefore);
        expect(await auditCount(group.id)).to.equal(auditBefore);
        expect((await groupRow(group.id)).name).to.equal(groupBefore.name);
        expect((await groupRow(group.id)).visibility_level).to.equal(groupBefore.visibility_level);
      });
    }

    it('lets a maintainer add, promote, demote and remove members and maintainers through the Members page’s own forms, each audited', async () => {
      const { owner, group } = await groupWithOwner();
      const maintainer = await join(group, owner, 'maintainer');
      const newcomer = await makeUser(idp.db);
      const client = await signIn(idp.url, maintainer);
      const membersUrl = `/groups/${group.path}/settings/members`;

      let page = await client.get(membersUrl).expect(200);
      await client.fill(page, membersUrl, { 'Username or email': newcomer.username, Role: 'maintainer' }).expect(302, `${membersUrl}?notice=added`);
      expect(await findRole(idp.db, group.id, newcomer.id)).to.equal('maintainer');

      page = await client.get(membersUrl).expect(200);
      await client.fill(page, `${membersUrl}/${newcomer.id}/role`, { [`Role of ${newcomer.username}`]: 'member' }).expect(302, `${membersUrl}?notice=role`);
      expect(await findRole(idp.db, group.id, newcomer.id)).to.equal('member');

      page = await client.get(membersUrl).expect(200);
      await client.fill(page, `${membersUrl}/${newcomer.id}/remove`).expect(302, `${membersUrl}?notice=removed`);
      expect(await findRole(idp.db, group.id, newcomer.id)).to.equal(undefined);

      const trail = await idp.db('audit_events').where({ group_id: group.id, actor_id: maintainer.id }).orderBy('id').select('action', 'target');
      expect(trail).to.deep.equal([
        { action: 'member.add', target: newcomer.username },
        { action: 'member.role', target: newcomer.username },
        { action: 'member.remove', target: newcomer.username },
      ]);
    });

    it('explains each role on the Members page and shows a maintainer an owner’s controls replaced by the reason, and no owner choice', async () => {
      const { owner, group } = await groupWithOwner();
      const maintainer = await join(group, owner, 'maintainer');
      const page = await (await signIn(idp.url, maintainer)).get(`/groups/${group.path}/settings/members`).expect(200);
      const explained = /data-testid="role-explanations">([\s\S]*?)<\/dl>/.exec(page.text)?.[1] ?? '';
      expect(explained).to.match(/Owner<\/dt><dd>Everything/);
      expect(explained).to.match(/Maintainer<\/dt><dd>Adds and removes members and maintainers/);
      expect(explained).to.match(/Member<\/dt><dd>Sees the group/);
      const rowOf = (username: string) => new RegExp(`data-username="${username}">[\\s\\S]*?</tr>`).exec(page.text)?.[0] ?? '';
      expect(rowOf(owner.username)).not.to.include('<form');
      expect(rowOf(owner.username)).to.include('Only an owner can change or remove an owner.');
      expect(rowOf(maintainer.username)).to.include(`/settings/members/${maintainer.id}/remove`);
      expect(page.text).not.to.match(/<option value="owner"/);
      expect(page.text).to.include('Only an owner can add an owner.');
    });

    it('answers a signed-in non-member with 403 on a settings page', async () => {
      const { group } = await groupWithOwner();
      const stranger = await signIn(idp.url, await makeUser(idp.db));
      await stranger.get(`/groups/${group.path}/settings`).expect(403);
    });

    it('sends a signed-out visitor of a settings page to the sign-in page', async () => {
      const { group } = await groupWithOwner();
      for (const url of settingsPages(group.path)) {
        await new Browser(idp.url).get(url).expect(302, `/login?return_to=${encodeURIComponent(url)}`);
      }
    });

    it('sends a signed-out visitor posting a settings form to the sign-in page and changes nothing', async () => {
      const { group } = await groupWithOwner();
      const visitor = await visit(idp.url);
      await visitor
        .submit(`/groups/${group.path}/settings`, { name: 'Anonymous', description: '', visibilityLevel: 'public' })
        .expect(302, /^\/login\?return_to=/);
      expect((await groupRow(group.id)).name).to.equal(group.name);
    });

    it('saves the general settings', async () => {
      const { group, client } = await groupWithOwner();
      await client
        .submit(`/groups/${group.path}/settings`, { name: 'Renamed', description: 'New words', visibilityLevel: 'public' })
        .expect(302, `/groups/${group.path}/settings?notice=saved`);
      const row = await groupRow(group.id);
      expect([row.name, row.description, row.visibility_level]).to.deep.equal(['Renamed', 'New words', 'public']);
      const page = await client.get(`/groups/${group.path}/settings?notice=saved`).expect(200);
      expect(page.text).to.include('Settings saved.');
      expect(inputValue(page.text, 'name')).to.equal('Renamed');
    });

    it('re-shows the general settings with the error next to the field and the typed values', async () => {
      const { group, client } = await groupWithOwner();
      const res = await client
        .submit(`/groups/${group.path}/settings`, { name: 'Kept name', description: 'd'.repeat(401), visibilityLevel: 'public' })
        .expect(400);
      expect(fieldError(res.text, 'description')).to.equal('Description must be at most 400 characters');
      expect(inputValue(res.text, 'name')).to.equal('Kept name');
      expect((await groupRow(group.id)).name).to.equal(group.name);
    });

    it('says what the maximum lifetime of personal access tokens takes, in the page’s words, for a word or a number out of range', async () => {
      const { group, client } = await groupWithOwner();
      const settings = `/groups/${group.path}/settings`;
      const page = await client.get(settings).expect(200);
      for (const typed of ['abc', '366', '0', '1.5']) {
        const res = await client.fill(page, settings, { 'Maximum lifetime of personal access tokens': typed }).expect(400);
        expect(fieldError(res.text, 'personalTokenMaxLifetimeDays'), typed).to.equal(
          'Maximum lifetime of personal access tokens must be a whole number of days from 1 to 365, or empty for no limit',
        );
        expect(inputValue(res.text, 'personalTokenMaxLifetimeDays')).to.equal(typed);
      }
      expect((await groupRow(group.id)).personal_token_max_lifetime_days).to.equal(null);
    });

    it('adds a member by username', async () => {
      const { group, client } = await groupWithOwner();
      const user = await makeUser(idp.db);
      await client
        .submit(`/groups/${group.path}/settings/members`, { user: user.username, role: 'maintainer' })
        .expect(302, `/groups/${group.path}/settings/members?notice=added`);
      expect(await findRole(idp.db, group.id, user.id)).to.equal('maintainer');
      const page = await client.get(`/groups/${group.path}/settings/members?notice=added`).expect(200);
      expect(page.text).to.include('Member added.');
      expect(page.text).to.include(`data-username="${user.username}"`);
    });

    it('adds a member by email', async () => {
      const { group, client } = await groupWithOwner();
      const user = await makeUser(idp.db);
      await client.submit(`/groups/${group.path}/settings/members`, { user: user.email.toUpperCase(), role: 'member' }).expect(302);
      expect(await findRole(idp.db, group.id, user.id)).to.equal('member');
    });

    it('shows an unknown user next to the Username or email field, keeping what was typed', async () => {
      const { group, client } = await groupWithOwner();
      const res = await client.submit(`/groups/${group.path}/settings/members`, { user: 'nobody-here', role: 'member' }).expect(400);
      expect(fieldError(res.text, 'user')).to.equal('No user "nobody-here"');
      expect(inputValue(res.text, 'user')).to.equal('nobody-here');
    });

    it('shows adding an existing member as a conflict next to the field', async () => {
      const { owner, group, client } = await groupWithOwner();
      const member = await join(group, owner, 'member');
      const res = await client.submit(`/groups/${group.path}/settings/members`, { user: member.username, role: 'owner' }).expect(409);
      expect(fieldError(res.text, 'user')).to.include('already a member');
      expect(await findRole(idp.db, group.id, member.id)).to.equal('member');
    });

    it('changes a member’s role', async () => {
      const { owner, group, client } = await groupWithOwner();
      const member = await join(group, owner, 'member');
      await client
        .submit(`/groups/${group.path}/settings/members/${member.id}/role`, { role: 'maintainer' })
        .expect(302, `/groups/${group.path}/settings/members?notice=role`);
      expect(await findRole(idp.db, group.id, member.id)).to.equal('maintainer');
    });

    it('removes a member', async () => {
      const { owner, group, client } = await groupWithOwner();
      const member = await join(group, owner, 'member');
      await client
        .submit(`/groups/${group.path}/settings/members/${member.id}/remove`, {})
        .expect(302, `/groups/${group.path}/settings/members?notice=removed`);
      expect(await findRole(idp.db, group.id, member.id)).to.equal(undefined);
      await (await signIn(idp.url, member)).get(`/groups/${group.path}`).expect(404);
    });

    it('refuses to let the last owner demote themselves, with a clear message', async () => {
      const { owner, group, client } = await groupWithOwner();
      await join(group, owner, 'maintainer');
      const res = await client.submit(`/groups/${group.path}/settings/members/${owner.id}/role`, { role: 'maintainer' }).expect(409);
      expect(errorMessage(res.text)).to.equal(`Could not change the role of ${owner.username}: a group must keep at least one owner.`);
      expect(res.text).to.include('Add member');
      expect(await findRole(idp.db, group.id, owner.id)).to.equal('owner');
    });

    it('refuses to let the last owner remove themselves, with a clear message', async () => {
      const { owner, group, client } = await groupWithOwner();
      const res = await client.submit(`/groups/${group.path}/settings/members/${owner.id}/remove`, {}).expect(409);
      expect(errorMessage(res.text)).to.equal(`Could not remove ${owner.username}: a group must keep at least one owner.`);
      expect(await findRole(idp.db, group.id, owner.id)).to.equal('owner');
    });

    it('lets one of two owners demote the other', async () => {
      const { owner, group, client } = await groupWithOwner();
      const second = await join(group, owner, 'owner');
      await client.submit(`/groups/${group.path}/settings/members/${second.id}/role`, { role: 'member' }).expect(302);
      expect(await findRole(idp.db, group.id, second.id)).to.equal('member');
      expect(await findRole(idp.db, group.id, owner.id)).to.equal('owner');
    });

    it('lets one of two owners demote themselves: to maintainer they keep Members, to member they go back to the group page', async () => {
      const { owner, group, client } = await groupWithOwner();
      const second = await join(group, owner, 'owner');
      await client
        .submit(`/groups/${group.path}/settings/members/${owner.id}/role`, { role: 'maintainer' })
        .expect(302, `/groups/${group.path}/settings/members?notice=role`);
      expect(await findRole(idp.db, group.id, owner.id)).to.equal('maintainer');
      expect(await findRole(idp.db, group.id, second.id)).to.equal('owner');
      await client.get(`/groups/${group.path}/settings`).expect(403);
      await client
        .submit(`/groups/${group.path}/settings/members/${owner.id}/role`, { role: 'member' })
        .expect(302, `/groups/${group.path}`);
      expect(await findRole(idp.db, group.id, owner.id)).to.equal('member');
    });

    it('answers a role change for someone who is not a member with a 404 page', async () => {
      const { group, client } = await groupWithOwner();
      const stranger = await makeUser(idp.db);
      await client.submit(`/groups/${group.path}/settings/members/${stranger.id}/role`, { role: 'owner' }).expect(404);
      expect(await findRole(idp.db, group.id, stranger.id)).to.equal(undefined);
    });

    it('shows these changes in the audit log with who, what, target and IP', async () => {
      const { owner, group, client } = await groupWithOwner();
      const [a, b] = [await makeUser(idp.db), await makeUser(idp.db)];
      await client.submit(`/groups/${group.path}/settings/members`, { user: a.username, role: 'member' }).expect(302);
      await client.submit(`/groups/${group.path}/settings/members`, { user: b.email, role: 'member' }).expect(302);
      await client.submit(`/groups/${group.path}/settings/members/${a.id}/role`, { role: 'maintainer' }).expect(302);
      await client.submit(`/groups/${group.path}/settings/members/${b.id}/remove`, {}).expect(302);
      await client.submit(`/groups/${group.path}/settings`, { name: 'Audited', description: '', visibilityLevel: 'private' }).expect(302);
      const res = await client.get(`/groups/${group.path}/settings/audit`).expect(200);
      const rows = [...res.text.matchAll(/<tr data-testid="audit-row">([\s\S]*?)<\/tr>/g)].map((m) => m[1]!.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ').trim());
      expect(rows).to.have.length(6);
      const [update, remove, role, addB, addA, create] = rows;
      expect(create).to.include('Group created').and.include(group.path).and.include(owner.username);
      expect(addA).to.include('Member added').and.include(a.username).and.include('role: member').and.include('127.0.0.1');
      expect(addB).to.include('Member added').and.include(b.username);
      expect(role).to.include('Role changed').and.include(a.username).and.include('role: member → maintainer').and.include(owner.username);
      expect(remove).to.include('Member removed').and.include(b.username).and.include('role was member');
      // Only what changed, by the form's labels: the description and visibility stayed.
      expect(update).to.include('Group settings changed').and.include(`(Name: ${group.name} → Audited)`);
      expect(update).not.to.include('Description').and.not.to.include('Visibility');
    });

    it('shows the Developer placeholder with a New application link', async () => {
      const { group, client } = await groupWithOwner();
      const res = await client.get(`/groups/${group.path}/settings/developer`).expect(200);
      expect(res.text).to.include('<h1>Developer</h1>');
      expect(res.text).to.include('OAuth applications of this group');
      expect(res.text).to.include(`href="/groups/${group.path}/settings/developer/apps/new"`);
    });
  });

  describe('CSRF', () => {
    it('refuses a new group without a CSRF token and creates nothing', async () => {
      const client = await signIn(idp.url, await makeUser(idp.db));
      const path = `nocsrf-${unique()}`;
      await client.postForm('/groups/new', { name: 'No token', path, visibilityLevel: 'private' }).expect(403);
      expect(await idp.db('groups').where({ path }).first()).to.equal(undefined);
    });

    it('refuses a new group with a wrong CSRF token and creates nothing', async () => {
      const client = await signIn(idp.url, await makeUser(idp.db));
      const other: Browser = await visit(idp.url);
      const path = `badcsrf-${unique()}`;
      await client.postForm('/groups/new', { name: 'Wrong token', path, visibilityLevel: 'private', _csrf: other.csrf }).expect(403);
      expect(await idp.db('groups').where({ path }).first()).to.equal(undefined);
    });

    it('refuses an owner’s settings form without a CSRF token and changes nothing', async () => {
      const { group, client } = await groupWithOwner();
      await client.postForm(`/groups/${group.path}/settings`, { name: 'Forged', description: '', visibilityLevel: 'public' }).expect(403);
      expect((await groupRow(group.id)).name).to.equal(group.name);
    });

    it('refuses an owner’s add-member form with a wrong CSRF token and adds no one', async () => {
      const { group, client } = await groupWithOwner();
      const user = await makeUser(idp.db);
      await client.postForm(`/groups/${group.path}/settings/members`, { user: user.username, role: 'owner', _csrf: 'x'.repeat(43) }).expect(403);
      expect(await findRole(idp.db, group.id, user.id)).to.equal(undefined);
    });
  });

  describe('escaping', () => {
    it('renders a group name and description containing a script tag escaped on every page', async () => {
      const user = await makeUser(idp.db);
      const client = await signIn(idp.url, user);
      const path = `xss-${unique()}`;
      await client.submit('/groups/new', { name: SCRIPT, path, description: `Hello ${SCRIPT}`, visibilityLevel: 'private' }).expect(302);
      for (const url of ['/groups', `/groups/${path}`, `/groups/${path}/settings`, `/groups/${path}/settings/members`, `/groups/${path}/settings/audit`]) {
        const res = await client.get(url).expect(200);
        expect(res.text, url).not.to.include(SCRIPT);
        expect(res.text, url).to.include('&lt;script&gt;alert(1)&lt;/script&gt;');
      }
    });

    it('re-shows a rejected new group form with the typed script tag escaped', async () => {
      const client = await signIn(idp.url, await makeUser(idp.db));
      const res = await client.submit('/groups/new', { name: SCRIPT, path: SCRIPT, description: SCRIPT, visibilityLevel: 'private' }).expect(400);
      expect(res.text).not.to.include(SCRIPT);
      expect(inputValue(res.text, 'path')).to.equal(SCRIPT);
    });

    it('renders a member’s name containing a script tag escaped', async () => {
      const { owner, group, client } = await groupWithOwner();
      const user = await makeUser(idp.db, { name: SCRIPT });
      await addMember(idp.db, await groupAccess(idp.db, owner.id, group.id), { user: user.username, role: 'member' });
      for (const url of [`/groups/${group.path}`, `/groups/${group.path}/settings/members`]) {
        const res = await client.get(url).expect(200);
        expect(res.text, url).not.to.include(SCRIPT);
      }
    });
  });
});
