import { expect } from 'chai';
import { findRole } from '../../src/db/groups.js';
import { addMember } from '../../src/services/groups.js';
import type { Role } from '../../src/vocabulary.js';
import { call, expectApiError } from '../helpers/api.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { groupAccess, makeApp, makeGroup, makeUser, personalToken, type TestUser } from '../helpers/factories.js';

describeEachProfile('API: a group’s members by role', (profile) => {
  const idp = useIdp(profile);

  /** A group with an owner and one user of each given role, each with a `groups:read-write` token. */
  async function groupOf(...roles: Role[]) {
    const owner = await makeUser(idp.db);
    const group = await makeGroup(idp.db, owner.id);
    const people: TestUser[] = [];
    for (const role of roles) {
      const user = await makeUser(idp.db);
      await addMember(idp.db, await groupAccess(idp.db, owner.id, group.id), { user: user.username, role });
      people.push(user);
    }
    const tokenOf = (user: TestUser) => personalToken(idp.db, user.id, { scopes: ['groups:read-write'] });
    return { owner, group, people, tokenOf };
  }

  const remove = async (groupId: number, userId: number, token: string) =>
    call(idp, `/apis/v2/groups/${groupId}/members/${userId}`, { method: 'DELETE', token });
  const lastAudit = (groupId: number) => idp.db('audit_events').where({ group_id: groupId }).orderBy('id', 'desc').first('action', 'actor_id', 'target', 'details');

  it('lets a maintainer remove a member and a maintainer, audited as them', async () => {
    const { group, people: [maintainer, member, other], tokenOf } = await groupOf('maintainer', 'member', 'maintainer');
    const token = await tokenOf(maintainer!);
    expect((await remove(group.id, member!.id, token)).status).to.equal(204);
    expect((await remove(group.id, other!.id, token)).status).to.equal(204);
    expect(await findRole(idp.db, group.id, member!.id)).to.equal(undefined);
    expect(await findRole(idp.db, group.id, other!.id)).to.equal(undefined);
    expect(await lastAudit(group.id)).to.deep.include({ action: 'member.remove', actor_id: maintainer!.id, target: other!.username });
  });

  it('refuses a maintainer removing an owner, and a member removing anyone, with 403 naming why, nothing changed', async () => {
    const { owner, group, people: [maintainer, member], tokenOf } = await groupOf('maintainer', 'member');
    const byMaintainer = await remove(group.id, owner.id, await tokenOf(maintainer!));
    expectApiError(byMaintainer, 403, 'forbidden');
    expect(byMaintainer.body.error_description).to.equal('only an owner of this group may add, remove, promote to or demote from owner');
    const byMember = await remove(group.id, maintainer!.id, await tokenOf(member!));
    expectApiError(byMember, 403, 'forbidden');
    expect(byMember.body.error_description).to.equal('only an owner or a maintainer of this group may do this');
    expect(await findRole(idp.db, group.id, owner.id)).to.equal('owner');
    expect(await findRole(idp.db, group.id, maintainer!.id)).to.equal('maintainer');
  });

  it('refuses a maintainer the group’s settings, deletion and applications (403), as before', async () => {
    const { owner, group, people: [maintainer], tokenOf } = await groupOf('maintainer');
    const token = await tokenOf(maintainer!);
    const app = await makeApp(idp.db, owner.id, group.id);
    const answers = [
      await call(idp, `/apis/v2/groups/${group.id}`, { method: 'PATCH', token, headers: { 'content-type': 'application/json' }, body: '{"name":"Taken"}' }),
      await call(idp, `/apis/v2/groups/${group.id}`, { method: 'DELETE', token }),
      await call(idp, `/apis/v2/groups/${group.id}/oauth-apps`, { token }),
      await call(idp, `/apis/v2/oauth-apps/${app.clientId}`, { token }),
    ];
    for (const res of answers) expectApiError(res, 403, 'forbidden');
    expect((await idp.db('groups').where({ id: group.id }).first('name')).name).to.equal(group.name);
  });

  for (const role of ['member', 'maintainer', 'owner'] as const) {
    it(`lets a ${role} leave with their own id, audited as them leaving`, async () => {
      const { group, people: [leaver], tokenOf } = await groupOf(role);
      expect((await remove(group.id, leaver!.id, await tokenOf(leaver!))).status).to.equal(204);
      expect(await findRole(idp.db, group.id, leaver!.id)).to.equal(undefined);
      const row = await lastAudit(group.id);
      expect(row).to.deep.include({ action: 'member.leave', actor_id: leaver!.id, target: leaver!.username });
      expect(JSON.parse(row.details)).to.deep.equal({ from: role });
    });
  }

  it('refuses the last owner leaving with 409 saying what to do, and a read-only token with 403', async () => {
    const { owner, group, tokenOf } = await groupOf('maintainer');
    const res = await remove(group.id, owner.id, await tokenOf(owner));
    expectApiError(res, 409, 'conflict');
    expect(res.body.error_description).to.equal('you are the last owner of this group: make another member an owner first, or delete the group');
    expectApiError(await remove(group.id, owner.id, await personalToken(idp.db, owner.id)), 403, 'insufficient_scope');
    expect(await findRole(idp.db, group.id, owner.id)).to.equal('owner');
  });

  it('lets only one of two owners leaving at once go', async () => {
    const { owner, group, people: [second], tokenOf } = await groupOf('owner');
    const [a, b] = [await tokenOf(owner), await tokenOf(second!)];
    const answers = await Promise.all([remove(group.id, owner.id, a), remove(group.id, second!.id, b)]);
    expect(answers.map((r) => r.status).sort()).to.deep.equal([204, 409]);
    expect(await idp.db('memberships').where({ group_id: group.id, role: 'owner' }).count({ n: '*' }).first()).to.satisfy((r: { n: number | string }) => Number(r.n) === 1);
  });

  it('answers a member that is not one with 404, and a stranger with the 404 of a group they cannot see', async () => {
    const { owner, group, tokenOf } = await groupOf();
    const stranger = await makeUser(idp.db);
    expectApiError(await remove(group.id, stranger.id, await tokenOf(owner)), 404, 'not_found');
    expectApiError(await remove(group.id, stranger.id, await tokenOf(stranger)), 404, 'not_found');
  });
});
