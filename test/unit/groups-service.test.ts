import { expect } from 'chai';
import { ConflictError, ValidationError } from '../../src/errors.js';
import { countOwners, findRole } from '../../src/db/groups.js';
import type { Actor } from '../../src/services/context.js';
import { addMember, changeRole, createGroup, removeMember } from '../../src/services/groups.js';
import { createUser } from '../../src/services/users.js';
import { describeEachProfile, useDatabase } from '../helpers/app.js';
import type { TestDatabase } from '../helpers/db.js';
import { groupAccess, makeGroup, makeUser } from '../helpers/factories.js';

const as = (userId: number): Actor => ({ userId, ip: null });

/** The error a promise rejects with (fails the test if it resolves). */
async function rejection(promise: Promise<unknown>): Promise<Error> {
  let thrown: unknown;
  try {
    await promise;
  } catch (err) {
    thrown = err;
  }
  expect(thrown, 'expected a rejection').to.be.instanceOf(Error);
  return thrown as Error;
}

async function rowCounts(t: TestDatabase): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const table of ['groups', 'memberships', 'audit_events', 'users']) {
    const row = await t.db(table).count({ n: '*' }).first();
    counts[table] = Number((row as { n: number | string }).n);
  }
  return counts;
}

describeEachProfile('group and user services', (profile) => {
  const t = useDatabase(profile);

  describe('createGroup', () => {
    it('makes the creator its owner and records the creation', async () => {
      const alice = await makeUser(t.db);
      const group = await makeGroup(t.db, alice.id);
      expect(await findRole(t.db, group.id, alice.id)).to.equal('owner');
      const audit = await t.db('audit_events').where({ group_id: group.id }).select('action', 'actor_id');
      expect(audit).to.deep.equal([{ action: 'group.create', actor_id: alice.id }]);
    });

    it('refuses a path that is taken, naming the path', async () => {
      const alice = await makeUser(t.db);
      const group = await makeGroup(t.db, alice.id);
      const err = await rejection(makeGroup(t.db, alice.id, { path: group.path }));
      expect(err).to.be.instanceOf(ConflictError).and.include({ field: 'path' });
      expect(err.message).to.equal(`path "${group.path}" is already taken`);
    });

    it('leaves no membership or audit row behind when the path is taken', async () => {
      const alice = await makeUser(t.db);
      const group = await makeGroup(t.db, alice.id);
      const before = await rowCounts(t);
      await rejection(makeGroup(t.db, alice.id, { path: group.path }));
      expect(await rowCounts(t)).to.deep.equal(before);
    });

    it('leaves no group behind when its owner cannot be recorded', async () => {
      const before = await rowCounts(t);
      await rejection(createGroup(t.db, as(999_999), { name: 'Orphan', path: 'orphan-group' }));
      expect(await rowCounts(t)).to.deep.equal(before);
      expect(await t.db('groups').where({ path: 'orphan-group' }).first()).to.equal(undefined);
    });

    it('names the field of an invalid value', async () => {
      const alice = await makeUser(t.db);
      const badPath = await rejection(createGroup(t.db, as(alice.id), { name: 'Team', path: 'Not A Slug' }));
      expect(badPath).to.be.instanceOf(ValidationError).and.include({ field: 'path' });
      const badVisibility = await rejection(
        createGroup(t.db, as(alice.id), { name: 'Team', path: 'team-vis', visibilityLevel: 'secret' as 'public' }),
      );
      expect(badVisibility).to.be.instanceOf(ValidationError).and.include({ field: 'visibilityLevel' });
      const noName = await rejection(createGroup(t.db, as(alice.id), { name: '  ', path: 'team-noname' }));
      expect(noName).to.be.instanceOf(ValidationError).and.include({ field: 'name' });
    });
  });

  describe('createUser', () => {
    it('refuses a username that differs only in case, naming username', async () => {
      const alice = await makeUser(t.db);
      const err = await rejection(makeUser(t.db, { username: alice.username.toUpperCase(), email: 'other-1@example.test' }));
      expect(err).to.be.instanceOf(ConflictError).and.include({ field: 'username' });
      expect(err.message).to.include('username');
    });

    it('refuses an email that differs only in case, naming email', async () => {
      const alice = await makeUser(t.db);
      const err = await rejection(makeUser(t.db, { username: 'other-2', email: alice.email.toUpperCase() }));
      expect(err).to.be.instanceOf(ConflictError).and.include({ field: 'email' });
      expect(err.message).to.include('email');
    });

    it('names the field of an invalid value', async () => {
      const cases: Array<[string, { username: string; email: string; password: string }]> = [
        ['username', { username: 'no spaces allowed', email: 'v1@example.test', password: 'long enough' }],
        ['username', { username: 'x', email: 'v2@example.test', password: 'long enough' }],
        ['email', { username: 'valid-3', email: 'not-an-email', password: 'long enough' }],
        ['password', { username: 'valid-4', email: 'v4@example.test', password: 'short' }],
      ];
      for (const [field, input] of cases) {
        const err = await rejection(createUser(t.db, input, { emailVerified: true }));
        expect(err, field).to.be.instanceOf(ValidationError).and.include({ field });
        expect(err.message, field).to.include(field);
      }
    });
  });

  describe('the last-owner rule', () => {
    it('keeps a sole owner from demoting themselves', async () => {
      const alice = await makeUser(t.db);
      const group = await makeGroup(t.db, alice.id);
      const err = await rejection(changeRole(t.db, await groupAccess(t.db, alice.id, group.id), alice.id, 'member'));
      expect(err).to.be.instanceOf(ConflictError).and.include({ field: 'role' });
      expect(await findRole(t.db, group.id, alice.id)).to.equal('owner');
    });

    it('keeps a sole owner from removing themselves', async () => {
      const alice = await makeUser(t.db);
      const group = await makeGroup(t.db, alice.id);
      const err = await rejection(removeMember(t.db, await groupAccess(t.db, alice.id, group.id), alice.id));
      expect(err).to.be.instanceOf(ConflictError);
      expect(await findRole(t.db, group.id, alice.id)).to.equal('owner');
    });

    it('lets one of two owners be demoted', async () => {
      const alice = await makeUser(t.db);
      const bob = await makeUser(t.db);
      const group = await makeGroup(t.db, alice.id);
      await addMember(t.db, await groupAccess(t.db, alice.id, group.id), { user: bob.username, role: 'owner' });
      await changeRole(t.db, await groupAccess(t.db, bob.id, group.id), alice.id, 'member');
      expect(await findRole(t.db, group.id, alice.id)).to.equal('member');
      expect(await countOwners(t.db, group.id)).to.equal(1);
    });

    it('keeps an owner when two owners demote each other at once', async () => {
      const alice = await makeUser(t.db);
      const bob = await makeUser(t.db);
      const group = await makeGroup(t.db, alice.id);
      await addMember(t.db, await groupAccess(t.db, alice.id, group.id), { user: bob.username, role: 'owner' });
      // Both requests have passed their access check (both are owners) before either changes anything.
      const [asAlice, asBob] = await Promise.all([groupAccess(t.db, alice.id, group.id), groupAccess(t.db, bob.id, group.id)]);
      const results = await Promise.allSettled([
        changeRole(t.db, asAlice, bob.id, 'member'),
        changeRole(t.db, asBob, alice.id, 'member'),
      ]);
      expect(await countOwners(t.db, group.id)).to.equal(1);
      expect(results.filter((r) => r.status === 'fulfilled')).to.have.length(1);
      const refused = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      expect(refused?.reason).to.be.instanceOf(ConflictError).and.include({ field: 'role' });
    });

    it('refuses an unknown role, naming role', async () => {
      const alice = await makeUser(t.db);
      const bob = await makeUser(t.db);
      const group = await makeGroup(t.db, alice.id);
      const err = await rejection(addMember(t.db, await groupAccess(t.db, alice.id, group.id), { user: bob.username, role: 'boss' }));
      expect(err).to.be.instanceOf(ValidationError);
      expect(err.message).to.match(/^role must be/);
      expect(await findRole(t.db, group.id, bob.id)).to.equal(undefined);
    });
  });
});
