import { expect } from 'chai';
import { canGroup, type GroupAction } from '../../src/policies/group.js';
import type { Role } from '../../src/vocabulary.js';

/** Group roles: members read; only owners manage members, settings and applications. */
const expected: Record<GroupAction, Record<Role | 'none', boolean>> = {
  read: { owner: true, maintainer: true, member: true, none: false },
  'manage-settings': { owner: true, maintainer: false, member: false, none: false },
  'manage-members': { owner: true, maintainer: false, member: false, none: false },
  'manage-apps': { owner: true, maintainer: false, member: false, none: false },
  'read-audit': { owner: true, maintainer: false, member: false, none: false },
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
