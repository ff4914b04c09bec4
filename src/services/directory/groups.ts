import type { Knex } from 'knex';
import { recordAudit } from '../../db/audit.js';
import { countOwners, deleteMembership, findGroupByPath, insertMembership, lockGroup, lockManagedMembership, setRole } from '../../db/groups.js';
import { isUniqueViolation } from '../../db/knex.js';
import { now } from '../../time.js';
import { MAPPING_ROLES, type GroupMapping, type MappingRole } from '../federation/ldap.js';
import { normalizeDn } from './connection.js';

/**
 * A directory's group mapping, applied at each sign-in: for every group the mapping names, the
 * person is made a member with the mapped role when one of their directory groups maps to it
 * (the highest role when several do), and removed when none does any more. Only memberships the
 * directory gave are changed or removed; one a person gave is left as it is, and a group never
 * loses its last owner this way. Each change is in the group's audit log, `via: directory`.
 */

/** What the mapping changed, group by group. */
export interface MappingChange {
  group: string;
  change: 'added' | 'role' | 'removed' | 'kept-last-owner';
  role?: MappingRole;
}

/** The role each named group should give, from the person's directory groups (normalized DNs). */
export function mappedRoles(mapping: readonly GroupMapping[], directoryGroups: readonly string[]): Map<string, MappingRole | undefined> {
  const theirs = new Set(directoryGroups.map(normalizeDn));
  const roles = new Map<string, MappingRole | undefined>();
  for (const line of mapping) {
    const current = roles.get(line.groupPath);
    if (!theirs.has(normalizeDn(line.directoryGroup))) {
      if (!roles.has(line.groupPath)) roles.set(line.groupPath, undefined);
      continue;
    }
    // MAPPING_ROLES is highest first.
    if (current === undefined || MAPPING_ROLES.indexOf(line.role) < MAPPING_ROLES.indexOf(current)) roles.set(line.groupPath, line.role);
  }
  return roles;
}

class KeepLastOwner extends Error {}

export async function applyGroupMapping(
  db: Knex,
  directory: { id: number; slug: string },
  mapping: readonly GroupMapping[],
  user: { id: number; username: string },
  directoryGroups: readonly string[],
): Promise<MappingChange[]> {
  const changes: MappingChange[] = [];
  for (const [path, role] of mappedRoles(mapping, directoryGroups)) {
    const group = await findGroupByPath(db, path);
    if (!group) continue;
    const audit = (trx: Knex, action: 'member.add' | 'member.role' | 'member.remove', details: Record<string, unknown>, at: string) =>
      recordAudit(trx, { groupId: group.id, actorId: null, action, target: user.username, details: { ...details, via: 'directory', provider: directory.slug }, ip: null }, at);
    try {
      const change = await db.transaction(async (trx): Promise<MappingChange | undefined> => {
        const row = await lockManagedMembership(trx, group.id, user.id);
        const managed = row !== undefined && row.managedBy === directory.id;
        const at = now();
        if (role && !row) {
          await insertMembership(trx, { groupId: group.id, userId: user.id, role, at, managedBy: directory.id });
          await audit(trx, 'member.add', { role }, at);
          return { group: path, change: 'added', role };
        }
        if (!managed || row.role === role) return undefined;
        await lockGroup(trx, group.id);
        if (role) await setRole(trx, group.id, user.id, role);
        else await deleteMembership(trx, group.id, user.id);
        if ((await countOwners(trx, group.id)) === 0) throw new KeepLastOwner();
        await audit(trx, role ? 'member.role' : 'member.remove', role ? { from: row.role, to: role } : { from: row.role }, at);
        return { group: path, change: role ? 'role' : 'removed', role };
      });
      if (change) changes.push(change);
    } catch (err) {
      if (err instanceof KeepLastOwner) changes.push({ group: path, change: 'kept-last-owner' });
      // Added meanwhile (the same person signing in twice at once): the other sign-in's row stands.
      else if (!isUniqueViolation(err)) throw err;
    }
  }
  return changes;
}
