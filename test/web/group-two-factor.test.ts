import { expect } from 'chai';
import { addMember } from '../../src/services/groups.js';
import { call, expectApiError } from '../helpers/api.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { signIn } from '../helpers/browser.js';
import { groupAccess, makeGroup, makeUser, personalToken } from '../helpers/factories.js';
import { errorMessage, fieldError } from '../helpers/html.js';
import { withTwoFactor } from '../helpers/totp.js';

describeEachProfile('Groups that require two-factor authentication', (profile) => {
  const idp = useIdp(profile);

  async function groupWithMember() {
    const owner = await makeUser(idp.db);
    const member = await makeUser(idp.db);
    const group = await makeGroup(idp.db, owner.id);
    await addMember(idp.db, await groupAccess(idp.db, owner.id, group.id), { user: member.username, role: 'member' });
    return { owner, member, group };
  }

  const settings = (group: { name: string; description: string; visibility_level: string }, requireTwoFactor: boolean) => ({
    name: group.name,
    description: group.description,
    visibilityLevel: group.visibility_level,
    ...(requireTwoFactor ? { requireTwoFactor: 'on' } : {}),
  });

  it('an owner without two-factor cannot require it (they would lock themselves out)', async () => {
    const { owner, group } = await groupWithMember();
    const browser = await signIn(idp.url, owner);
    await browser.get(`/groups/${group.path}/settings`).expect(200);
    const refused = await browser.submit(`/groups/${group.path}/settings`, settings(group, true)).expect(400);
    expect(fieldError(refused.text, 'requireTwoFactor')).to.match(/^Require two-factor authentication needs two-factor authentication on your own account first/);
    expect((await idp.db('groups').where({ id: group.id }).first('require_two_factor')).require_two_factor).to.be.oneOf([false, 0]);
  });

  it('an owner without two-factor who also leaves the name empty is told both at once', async () => {
    const { owner, group } = await groupWithMember();
    const browser = await signIn(idp.url, owner);
    const page = await browser.get(`/groups/${group.path}/settings`).expect(200);
    const refused = await browser.fill(page, `/groups/${group.path}/settings`, { Name: '', 'Require two-factor authentication': 'checked' }).expect(400);
    expect(fieldError(refused.text, 'name')).to.equal('Name is required');
    expect(fieldError(refused.text, 'requireTwoFactor')).to.match(/^Require two-factor authentication needs two-factor authentication on your own account first/);
  });

  it('members without it are marked in Members and refused the group’s pages and API (403 naming why) until they turn it on', async () => {
    const { owner, member, group } = await groupWithMember();
    // Signed in before turning it on: this session stays signed in.
    const ownerSite = await signIn(idp.url, owner);
    await withTwoFactor(idp.db, owner);
    await ownerSite.get(`/groups/${group.path}/settings`).expect(200);
    await ownerSite.submit(`/groups/${group.path}/settings`, settings(group, true)).expect(302);
    const members = await ownerSite.get(`/groups/${group.path}/settings/members`).expect(200);
    const rowOf = (username: string) => new RegExp(`data-username="${username}">[\\s\\S]*?</tr>`).exec(members.text)?.[0] ?? '';
    expect(rowOf(member.username)).to.include('data-testid="no-two-factor"');
    expect(rowOf(owner.username)).not.to.include('data-testid="no-two-factor"');

    const memberSite = await signIn(idp.url, member);
    const page = await memberSite.get(`/groups/${group.path}`).expect(403);
    expect(errorMessage(page.text)).to.match(/requires two-factor authentication/);
    const token = await personalToken(idp.db, member.id);
    const api = await call(idp, `/apis/v2/groups/${group.id}`, { token });
    expectApiError(api, 403, 'two_factor_required');
    expect(api.body.error_description).to.include(group.name);

    await withTwoFactor(idp.db, member);
    await memberSite.get(`/groups/${group.path}`).expect(200);
    const allowed = await call(idp, `/apis/v2/groups/${group.id}`, { token });
    expect(allowed.status).to.equal(200);
    expect(allowed.body.data.requireTwoFactor).to.equal(true);

    const trail = await idp.db('audit_events').where({ group_id: group.id, action: 'group.update' }).first('details');
    expect(JSON.parse(trail.details).changes.requireTwoFactor).to.deep.equal({ from: false, to: true });
  });

  it('a stranger still gets the 404 of a group they cannot see, not the two-factor reason', async () => {
    const { owner, group } = await groupWithMember();
    const ownerSite = await signIn(idp.url, owner);
    await withTwoFactor(idp.db, owner);
    await ownerSite.get(`/groups/${group.path}/settings`).expect(200);
    await ownerSite.submit(`/groups/${group.path}/settings`, settings(group, true)).expect(302);
    const stranger = await makeUser(idp.db);
    const res = await call(idp, `/apis/v2/groups/${group.id}`, { token: await personalToken(idp.db, stranger.id) });
    expectApiError(res, 404, 'not_found');
  });
});
