import { expect } from 'chai';
import { canChangeMember, canGroup, type GroupAction } from '../../src/policies/group.js';
import type { Role } from '../../src/vocabulary.js';

/** Group roles: members read and leave; maintainers also manage members and read the audit log; owners do everything. */
const expected: Record<GroupAction, Record<Role | 'none', boolean>> = {
  read: { owner: true, maintainer: true, member: true, none: false },
  leave: { owner: true, maintainer: true, member: true, none: false },
  'manage-settings': { owner: true, maintainer: false, member: false, none: false },
  'manage-members': { owner: true, maintainer: true, member: false, none: false },
  'manage-apps': { owner: true, maintainer: false, member: false, none: false },
  'manage-webhooks': { owner: true, maintainer: false, member: false, none: false },
  'manage-resources': { owner: true, maintainer: false, member: false, none: false },
  'read-audit': { owner: true, maintainer: true, member: false, none: false },
  'delete-group': { owner: true, maintainer: false, member: false, none: false },
};

describe('canGroup', () => {
  for (const [action, byRole] of Object.entries(expected) as Array<[GroupAction, Record<Role | 'none', boolean>]>) {
    for (const [role, allowed] of Object.entries(byRole) as Array<[Role | 'none', boolean]>) {
      it(`${allowed ? 'lets' : 'does not let'} ${role === 'none' ? 'a non-member' : role === 'owner' ? 'an owner' : `a ${role}`} ${action}`, () => {
        expect(canGroup(role === 'none' ? undefined : role, action)).to.equal(allowed);
      });
    }
  }
});

describe('canChangeMember', () => {
  const cases: Array<[Role | undefined, { from?: Role; to?: Role }, boolean]> = [
    ['owner', { to: 'owner' }, true],
    ['owner', { from: 'owner' }, true],
    ['owner', { from: 'owner', to: 'member' }, true],
    ['maintainer', { to: 'member' }, true],
    ['maintainer', { to: 'maintainer' }, true],
    ['maintainer', { from: 'member', to: 'maintainer' }, true],
    ['maintainer', { from: 'maintainer', to: 'member' }, true],
    ['maintainer', { from: 'maintainer' }, true],
    ['maintainer', { to: 'owner' }, false],
    ['maintainer', { from: 'member', to: 'owner' }, false],
    ['maintainer', { from: 'owner', to: 'maintainer' }, false],
    ['maintainer', { from: 'owner' }, false],
    ['member', { from: 'member' }, false],
    ['member', { to: 'member' }, false],
    [undefined, { to: 'member' }, false],
  ];
  for (const [role, change, allowed] of cases) {
    it(`${allowed ? 'lets' : 'does not let'} ${role ?? 'a non-member'} move a member from ${change.from ?? 'outside'} to ${change.to ?? 'outside'}`, () => {
      expect(canChangeMember(role, change)).to.equal(allowed);
    });
  }
});
