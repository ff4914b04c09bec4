import type { Knex } from 'knex';
import { z } from 'zod';
import { AppError, ConflictError, ForbiddenError, NotFoundError, ValidationError, problemOf } from '../errors.js';
import { isUniqueViolation } from '../db/knex.js';
import { now } from '../time.js';
import { auditEventBatches, listAuditEvents, listAudit, recordAudit, type AuditFilter, type AuditRow } from '../db/audit.js';
import * as groups from '../db/groups.js';
import { findUserByLogin, usernameOf } from '../db/users.js';
import { canChangeMember, canGroup, type GroupAction } from '../policies/group.js';
import { auditActor, auditActorId, changedFields, type Actor, type PersonalTokenLimits } from './context.js';
import { capInWords, comparableLifetimeMs, exceedsCap, lifetimeInWords, maxLifetimeDays } from '../policies/token-lifetime.js';
import { clientIdsOfGroup } from '../db/apps.js';
import { changing } from './change-versions.js';
import * as rules from './rules.js';
import { claimSubmission, completeSubmission, type SubmissionKey } from './submissions.js';
import { hasTwoFactor } from './two-factor.js';
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
  /** Left out: unchanged. */
  requireTwoFactor: z.boolean().optional(),
  /** Left out: unchanged. */
  personalTokenMaxLifetimeDays: maxLifetimeDays.optional(),
});

/** Settings that ask for two-factor authentication to be required. */
const TURNING_ON_TWO_FACTOR = z.object({ requireTwoFactor: z.literal(true) });

/** A personal access token that lives longer than a group allows: refused on that group's routes. */
export class TokenLifetimeError extends AppError {
  constructor(group: groups.GroupRow, lifetime: number | null) {
    super(
      403,
      'token_lifetime_exceeds_group_policy',
      `the group ${group.name} allows personal access tokens of at most ${capInWords(group.personal_token_max_lifetime_days)}; this token ${lifetimeInWords(lifetime)}. Use a token with a shorter expiration for this group`,
    );
  }
}

/** A member of a group that requires two-factor authentication, without it: refused until they turn it on. */
export class TwoFactorRequiredError extends AppError {
  constructor(groupName: string) {
    super(403, 'two_factor_required', `The group ${groupName} requires two-factor authentication. Turn it on in Account settings → Two-factor authentication to use the group.`);
  }
}

/** How a route names a group: the API by id, the pages by path. */
export type GroupRef = { id: number } | { path: string };

/**
 * A group as an actor reached it through `accessGroup`: the group, their role in it (none for the
 * admin CLI) and who they are. The services that change a group take this instead of a bare id,
 * so the group is loaded once per request and checked where it is used.
 */
export interface GroupAccess {
  actor: Actor;
  group: groups.GroupRow;
  role: Role | undefined;
}

/**
 * What a group an actor is not a member of looks like to them. `hidden`: it does not exist (404)
 * whatever they ask, as on the API. `forbidden`: it exists, and anything but reading it is
 * refused (403), as on the site's settings pages, which say "owners only" to everyone.
 */
export type Outsiders = 'hidden' | 'forbidden';

export const NO_GROUP = 'no such group, or you are not a member of it';

/**
 * The one rule of group access, asked by the pages, the API and the CLI alike: the group and
 * the actor's role are loaded in one query, then the policy decides. A group that does not
 * exist and one the actor may not see read the same.
 */
export async function accessGroup(
  db: Knex,
  actor: Actor,
  ref: GroupRef,
  action: GroupAction,
  outsiders: Outsiders = 'hidden',
): Promise<GroupAccess> {
  const found = await groups.findGroupAndRole(db, ref, actor.userId);
  if (!found) throw new NotFoundError(NO_GROUP);
  const { role, actor_two_factor: actorHasTwoFactor, ...group } = found;
  if (actor.application) {
    const access = { actor, group, role: applicationRole(actor, group.id) };
    requireGroupAction(access, action, outsiders);
    return access;
  }
  // A personal access token limited to other groups sees this one as a group its user is not in.
  const outOfReach = actor.token?.groups !== undefined && !actor.token.groups.has(Number(group.id));
  const access = { actor, group, role: outOfReach ? undefined : (role ?? undefined) };
  requireGroupAction(access, action, outsiders);
  if (access.role && actor.token && exceedsCap(actor.token.lifetimeMs, group.personal_token_max_lifetime_days)) {
    throw new TokenLifetimeError(group, actor.token.lifetimeMs);
  }
  if (access.role && closedForTwoFactor(group, actor, Boolean(actorHasTwoFactor))) throw new TwoFactorRequiredError(group.name);
  return access;
}

/**
 * An application acting as itself (client credentials) is in its own group as a maintainer: it
 * reads the group, its members and its audit log, and (with `groups:read-write`) adds and removes
 * members and maintainers. Ownership, settings, applications and deleting the group stay with
 * people. Every other group is one it is not in (404 on the API). No two-factor rule applies: it
 * is not a person.
 */
function applicationRole(actor: Actor, groupId: number): Role | undefined {
  return Number(actor.application?.groupId) === Number(groupId) ? 'maintainer' : undefined;
}

/** The group of an application acting as itself, as a page of one (`GET /groups`). */
export async function groupsOfApplication(db: Knex, groupId: number, page: { limit: number; offset: number; filter?: string }) {
  const group = await groups.findGroupById(db, groupId);
  const needle = page.filter?.toLowerCase();
  const matches = group && (!needle || group.name.toLowerCase().includes(needle) || group.path.toLowerCase().includes(needle));
  const all = matches ? [{ ...group, role: 'maintainer' as Role }] : [];
  return { total: all.length, items: all.slice(page.offset, page.offset + page.limit) };
}

/**
 * Whether a group stays closed to one of its members until they turn two-factor authentication
 * on: it requires it, they have none, and they did not sign in with a second factor upstream.
 */
export function closedForTwoFactor(group: Pick<groups.GroupRow, 'require_two_factor'>, actor: Actor, actorHasTwoFactor: boolean): boolean {
  return Boolean(group.require_two_factor) && !actorHasTwoFactor && !actor.upstreamSecondFactor && !actor.admin;
}

/**
 * The name of the group at a page's address (`/groups/<path>…`) when it is closed to this member
 * for want of two-factor authentication: the reason the two-factor page gives. Undefined for any
 * other address, a group they are not in, or one open to them.
 */
export async function groupClosedForTwoFactorAt(db: Knex, actor: Actor, address: string): Promise<string | undefined> {
  const path = rules.groupPath.safeParse(/^\/groups\/([^/?#]+)/.exec(address)?.[1]?.toLowerCase());
  if (!path.success) return undefined;
  const found = await groups.findGroupAndRole(db, { path: path.data }, actor.userId);
  if (!found?.role || !closedForTwoFactor(found, actor, Boolean(found.actor_two_factor))) return undefined;
  return found.name;
}

/**
 * The policy on an access already loaded, without a query: the services ask it again for the
 * action they perform, whatever the route asked for.
 */
export function requireGroupAction(access: GroupAccess, action: GroupAction, outsiders: Outsiders = 'hidden'): void {
  if (access.actor.admin) return;
  if (!access.role && (action === 'read' || outsiders === 'hidden')) throw new NotFoundError(NO_GROUP);
  if (!canGroup(access.role, action)) throw new ForbiddenError(action === 'manage-members' || action === 'read-audit' ? ONLY_OWNERS_AND_MAINTAINERS : ONLY_OWNERS);
}

const ONLY_OWNERS = 'only an owner of this group may do this';
const ONLY_OWNERS_AND_MAINTAINERS = 'only an owner or a maintainer of this group may do this';

/** The part of the rule that needs the member's role: only owners touch ownership. */
function requireMemberChange(access: GroupAccess, change: { from?: Role; to?: Role }): void {
  if (access.actor.admin || canChangeMember(access.role, change)) return;
  throw new ForbiddenError('only an owner of this group may add, remove, promote to or demote from owner');
}

/**
 * The groups a user belongs to, with their role in each, a page at a time. Through a personal
 * access token: only those it reaches (the groups it is limited to, and not the groups whose cap
 * on tokens' lifetime it exceeds).
 */
export function groupsOfUser(db: Knex, userId: number, page: { limit: number; offset: number; filter?: string }, token?: PersonalTokenLimits) {
  const reach = token ? { tokenId: token.tokenId, limited: token.groups !== undefined, lifetimeMs: comparableLifetimeMs(token.lifetimeMs) } : undefined;
  return groups.pageGroupsOfUser(db, userId, { ...page, reach });
}

/** The members of a group the actor may read, by username. */
export function membersOf(db: Knex, access: GroupAccess): Promise<groups.MemberRow[]> {
  requireGroupAction(access, 'read');
  return groups.listMembers(db, access.group.id);
}

/** The latest events of a group's audit trail (owners and maintainers). */
export function auditLogOf(db: Knex, access: GroupAccess): Promise<AuditRow[]> {
  requireGroupAction(access, 'read-audit');
  return listAudit(db, access.group.id);
}

/** A page of the group's audit log matching `filter`, newest first (owners and maintainers). */
export function groupAuditEvents(db: Knex, access: GroupAccess, filter: AuditFilter, page: { limit: number; offset: number }): Promise<{ total: number; items: AuditRow[] }> {
  requireGroupAction(access, 'read-audit');
  return listAuditEvents(db, { groupId: access.group.id }, filter, page);
}

/** The whole of the group's audit log matching `filter`, newest first, a batch at a time. */
export function groupAuditExport(db: Knex, access: GroupAccess, filter: AuditFilter = {}): AsyncGenerator<AuditRow[]> {
  requireGroupAction(access, 'read-audit');
  return auditEventBatches(db, { groupId: access.group.id }, filter);
}

/** The path of a group by id (where a repeated submission of the new-group form is sent), or undefined once it is gone. */
export async function groupPathById(db: Knex, id: number): Promise<string | undefined> {
  return (await groups.findGroupById(db, id))?.path;
}

/** A group as it is now (after a change), or undefined once it is gone. */
export function groupById(db: Knex, id: number): Promise<groups.GroupRow | undefined> {
  return groups.findGroupById(db, id);
}

/** The actor's role in a group as it is now (after a change they made to their own membership). */
export function currentRole(db: Knex, access: GroupAccess): Promise<Role | undefined> {
  return groups.findRole(db, access.group.id, access.actor.userId);
}

/**
 * The creator becomes the group's first owner, in the same transaction. With a form's one-time
 * key, a repeated submission creates nothing (RepeatedSubmission).
 */
export async function createGroup(db: Knex, actor: Actor, input: NewGroup | Record<string, string>, submission?: SubmissionKey): Promise<groups.GroupRow> {
  const data = rules.parse(newGroupSchema, input);
  try {
    return await db.transaction(async (trx) => {
      await claimSubmission(trx, submission);
      const at = now();
      const group = await groups.insertGroup(trx, { ...data, at });
      await groups.insertMembership(trx, { groupId: group.id, userId: actor.userId, role: 'owner', at });
      await completeSubmission(trx, submission, group.id);
      await recordAudit(trx, { groupId: group.id, actorId: auditActorId(actor), action: 'group.create', target: group.path, ip: actor.ip }, at);
      return group;
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw new ConflictError('path', `path "${data.path}" is already taken`);
    throw err;
  }
}

export async function updateGroupSettings(db: Knex, access: GroupAccess, input: unknown): Promise<void> {
  requireGroupAction(access, 'manage-settings');
  const { actor, group } = access;
  // Every problem at once: the two-factor check runs whether or not the other fields are right.
  const parsed = groupSettingsSchema.safeParse(input);
  const problems = parsed.success ? [] : rules.problemsOf(parsed.error.issues);
  const turningOn = TURNING_ON_TWO_FACTOR.safeParse(input).success && !group.require_two_factor;
  // The owner who turns it on must have it: else they would be refused their own group at once.
  if (turningOn && !actor.admin && !(await hasTwoFactor(db, actor.userId))) {
    const message = 'requireTwoFactor needs two-factor authentication on your own account first (Account settings → Two-factor authentication)';
    problems.push({ field: 'requireTwoFactor', problem: problemOf('requireTwoFactor', message), message });
  }
  if (!parsed.success || problems.length) throw rules.invalidFields(problems);
  const data = parsed.data;
  const requireTwoFactor = data.requireTwoFactor ?? Boolean(group.require_two_factor);
  const cap = data.personalTokenMaxLifetimeDays === undefined ? group.personal_token_max_lifetime_days : data.personalTokenMaxLifetimeDays;
  // The cap is recorded in words ("30 days", "no limit"), as the audit log shows it.
  const changes = changedFields(
    {
      name: group.name,
      description: group.description,
      visibilityLevel: group.visibility_level,
      requireTwoFactor: Boolean(group.require_two_factor),
      personalTokenMaxLifetimeDays: capInWords(group.personal_token_max_lifetime_days),
    },
    { name: data.name, description: data.description, visibilityLevel: data.visibilityLevel, requireTwoFactor, personalTokenMaxLifetimeDays: capInWords(cap) },
  );
  // A save that changes nothing writes nothing: no audit row, and updatedAt stays.
  if (!Object.keys(changes).length) return;
  const update = () =>
    db.transaction(async (trx) => {
      const at = now();
      await groups.updateGroup(trx, group.id, { ...data, requireTwoFactor, personalTokenMaxLifetimeDays: cap, at });
      await recordAudit(trx, { groupId: group.id, ...auditActor(actor), action: 'group.update', target: data.name, details: { changes }, ip: actor.ip }, at);
    });
  // The sign-in and consent pages name an application's group, and cache it under the application's version.
  if (data.name === group.name) await update();
  else await changing(db, async () => (await clientIdsOfGroup(db, group.id)).map((id) => `app:${id}` as const), update);
}

const newMemberSchema = z.object({
  user: z.string({ error: 'user is required' }).trim().min(1, 'user is required'),
  role: rules.role,
});

/**
 * Adds a user (by username or e-mail) to a group; returns who was added. With a form's one-time
 * key, a repeated submission adds nothing (RepeatedSubmission).
 */
export async function addMember(
  db: Knex,
  access: GroupAccess,
  input: { user: string; role: string },
  submission?: SubmissionKey,
): Promise<{ id: number; username: string }> {
  requireGroupAction(access, 'manage-members');
  const { actor, group: { id: groupId } } = access;
  const { user: login, role } = rules.parse(newMemberSchema, input);
  requireMemberChange(access, { to: role });
  const user = await findUserByLogin(db, login);
  if (!user) throw new ValidationError('user', `no user "${login}"`);
  try {
    await db.transaction(async (trx) => {
      await claimSubmission(trx, submission);
      const at = now();
      await groups.insertMembership(trx, { groupId, userId: user.id, role, at });
      await completeSubmission(trx, submission, user.id);
      await recordAudit(trx, { groupId, ...auditActor(actor), action: 'member.add', target: user.username, details: { role }, ip: actor.ip }, at);
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw new ConflictError('user', `${user.username} is already a member`);
    throw err;
  }
  return { id: Number(user.id), username: user.username };
}

/**
 * The last-owner rule lives here: a change that would leave the group without an owner is
 * refused. The owner count is read inside the transaction, after the change, so two owners
 * demoting each other (or both leaving) at once cannot both succeed on PostgreSQL (row locks) or
 * SQLite (one writer). The member's role is read there too, locked, and checked against the
 * actor's: a maintainer cannot touch an owner.
 */
async function changeMembership(
  db: Knex,
  access: GroupAccess,
  userId: number,
  change: { role: Role } | { remove: true } | { leave: true },
): Promise<void> {
  const { actor, group: { id: groupId } } = access;
  const leaving = 'leave' in change;
  requireGroupAction(access, leaving ? 'leave' : 'manage-members');
  await db.transaction(async (trx) => {
    const currentRole = await groups.lockMembership(trx, groupId, userId);
    if (!currentRole) throw new NotFoundError(leaving ? 'you are not a member of this group' : 'that user is not a member of this group');
    if (!leaving) requireMemberChange(access, { from: currentRole, to: 'role' in change ? change.role : undefined });
    // The role they already have: nothing changes, so nothing is recorded.
    if ('role' in change && change.role === currentRole) return;
    await groups.lockGroup(trx, groupId);
    if ('role' in change) await groups.setRoleByHand(trx, groupId, userId, change.role);
    else await groups.deleteMembership(trx, groupId, userId);
    if ((await groups.countOwners(trx, groupId)) === 0) {
      throw new ConflictError('role', leaving ? LAST_OWNER_LEAVING : 'a group must keep at least one owner');
    }
    const target = (await usernameOf(trx, userId)) ?? String(userId);
    await recordAudit(
      trx,
      {
        groupId,
        ...auditActor(actor),
        action: leaving ? 'member.leave' : 'role' in change ? 'member.role' : 'member.remove',
        target,
        details: 'role' in change ? { from: currentRole, to: change.role } : { from: currentRole },
        ip: actor.ip,
      },
      now(),
    );
  });
}

/** Why the last owner cannot leave, as the group page and the API say it. */
export const LAST_OWNER_LEAVING = 'you are the last owner of this group: make another member an owner first, or delete the group';

export function changeRole(db: Knex, access: GroupAccess, userId: number, role: string): Promise<void> {
  return changeMembership(db, access, userId, rules.parse(z.object({ role: rules.role }), { role }));
}

export function removeMember(db: Knex, access: GroupAccess, userId: number): Promise<void> {
  return changeMembership(db, access, userId, { remove: true });
}

/** The actor leaves the group, whatever their role; the last owner cannot. */
export function leaveGroup(db: Knex, access: GroupAccess): Promise<void> {
  return changeMembership(db, access, access.actor.userId, { leave: true });
}

/** Whether the actor is the group's only owner (who cannot leave it), among its members as listed. */
export function isLastOwner(access: GroupAccess, members: readonly groups.MemberRow[]): boolean {
  return access.role === 'owner' && members.filter((m) => m.role === 'owner').length === 1;
}

/** The admin CLI's access to a group named by its path; 404 naming the path when there is none. */
export async function adminAccess(db: Knex, actor: Actor, path: string, field = 'group'): Promise<GroupAccess> {
  if (!actor.admin) throw new Error('adminAccess is the admin CLI\'s; people reach groups through accessGroup');
  const key = path.trim();
  if (!key) throw new ValidationError(field, `${field} is required`);
  const group = await groups.findGroupByPath(db, key);
  if (!group) throw new NotFoundError(`no group "${key}"`);
  return { actor, group, role: undefined };
}
