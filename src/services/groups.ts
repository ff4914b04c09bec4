import type { Knex } from 'knex';
import { z } from 'zod';
import { ConflictError, ForbiddenError, NotFoundError, ValidationError } from '../errors.js';
import { isUniqueViolation } from '../db/knex.js';
import { now } from '../db/time.js';
import { recordAudit } from '../db/audit.js';
import * as groups from '../db/groups.js';
import { findUserByLogin, usernameOf } from '../db/users.js';
import { canGroup, type GroupAction } from '../policies/group.js';
import { auditActorId, type Actor } from './context.js';
import * as rules from './rules.js';
import type { Role } from '../vocabulary.js';

export const newGroupSchema = z.object({
  name: rules.name,
  path: rules.groupPath,
  description: rules.description,
  visibilityLevel: rules.visibilityLevel.default('private'),
});
export type NewGroup = z.input<typeof newGroupSchema>;

export const groupSettingsSchema = z.object({
  name: rules.name,
  description: rules.description,
  visibilityLevel: rules.visibilityLevel,
});

/** Loads a group and the actor's role in it, and checks the policy; 404 when it does not exist. */
export async function authorizeGroup(
  db: Knex,
  actor: Actor,
  groupId: number,
  action: GroupAction,
): Promise<{ group: groups.GroupRow; role: Role | undefined }> {
  const [group, role] = await Promise.all([groups.findGroupById(db, groupId), groups.findRole(db, groupId, actor.userId)]);
  if (!group) throw new NotFoundError('no such group');
  if (actor.admin) return { group, role };
  if (!role && action === 'read') throw new NotFoundError('no such group');
  if (!canGroup(role, action)) throw new ForbiddenError('only an owner of this group may do this');
  return { group, role };
}

/** The creator becomes the group's first owner, in the same transaction. */
export async function createGroup(db: Knex, actor: Actor, input: NewGroup): Promise<groups.GroupRow> {
  const data = rules.parse(newGroupSchema, input);
  try {
    return await db.transaction(async (trx) => {
      const at = now();
      const group = await groups.insertGroup(trx, { ...data, at });
      await groups.insertMembership(trx, { groupId: group.id, userId: actor.userId, role: 'owner', at });
      await recordAudit(trx, { groupId: group.id, actorId: auditActorId(actor), action: 'group.create', target: group.path, ip: actor.ip }, at);
      return group;
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw new ConflictError('path', `path "${data.path}" is already taken`);
    throw err;
  }
}

export async function updateGroupSettings(db: Knex, actor: Actor, groupId: number, input: unknown): Promise<void> {
  await authorizeGroup(db, actor, groupId, 'manage-settings');
  const data = rules.parse(groupSettingsSchema, input);
  await db.transaction(async (trx) => {
    const at = now();
    await groups.updateGroup(trx, groupId, { ...data, at });
    await recordAudit(trx, { groupId, actorId: auditActorId(actor), action: 'group.update', target: data.name, ip: actor.ip }, at);
  });
}

export async function addMember(
  db: Knex,
  actor: Actor,
  groupId: number,
  input: { user: string; role: string },
): Promise<void> {
  await authorizeGroup(db, actor, groupId, 'manage-members');
  const { role } = rules.parse(z.object({ role: rules.role }), { role: input.role });
  const login = (input.user ?? '').trim();
  if (!login) throw new ValidationError('user', 'user is required');
  const user = await findUserByLogin(db, login);
  if (!user) throw new ValidationError('user', `no user "${login}"`);
  try {
    await db.transaction(async (trx) => {
      const at = now();
      await groups.insertMembership(trx, { groupId, userId: user.id, role, at });
      await recordAudit(trx, { groupId, actorId: auditActorId(actor), action: 'member.add', target: user.username, details: { role }, ip: actor.ip }, at);
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw new ConflictError('user', `${user.username} is already a member`);
    throw err;
  }
}

/**
 * The last-owner rule lives here: a change that would leave the group without an owner is
 * refused. The owner count is read inside the transaction, after the change, so two owners
 * demoting each other at once cannot both succeed on PostgreSQL (row locks) or SQLite (one writer).
 */
async function changeMembership(
  db: Knex,
  actor: Actor,
  groupId: number,
  userId: number,
  change: { role: Role } | { remove: true },
): Promise<void> {
  await authorizeGroup(db, actor, groupId, 'manage-members');
  await db.transaction(async (trx) => {
    const currentRole = await groups.lockMembership(trx, groupId, userId);
    if (!currentRole) throw new NotFoundError('that user is not a member of this group');
    await groups.lockGroup(trx, groupId);
    if ('remove' in change) await groups.deleteMembership(trx, groupId, userId);
    else await groups.setRole(trx, groupId, userId, change.role);
    if ((await groups.countOwners(trx, groupId)) === 0) {
      throw new ConflictError('role', 'a group must keep at least one owner');
    }
    const target = (await usernameOf(trx, userId)) ?? String(userId);
    await recordAudit(
      trx,
      {
        groupId,
        actorId: auditActorId(actor),
        action: 'remove' in change ? 'member.remove' : 'member.role',
        target,
        details: 'remove' in change ? { from: currentRole } : { from: currentRole, to: change.role },
        ip: actor.ip,
      },
      now(),
    );
  });
}

export function changeRole(db: Knex, actor: Actor, groupId: number, userId: number, role: string): Promise<void> {
  return changeMembership(db, actor, groupId, userId, rules.parse(z.object({ role: rules.role }), { role }));
}

export function removeMember(db: Knex, actor: Actor, groupId: number, userId: number): Promise<void> {
  return changeMembership(db, actor, groupId, userId, { remove: true });
}

/** A group by its path (how the CLI names groups); 404 naming the path when there is none. */
export async function requireGroupByPath(db: Knex, path: string, field = 'group'): Promise<groups.GroupRow> {
  const key = path.trim();
  if (!key) throw new ValidationError(field, `${field} is required`);
  const group = await groups.findGroupByPath(db, key);
  if (!group) throw new NotFoundError(`no group "${key}"`);
  return group;
}
