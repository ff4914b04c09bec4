import type { Role } from '../vocabulary.js';

/**
 * Who may do what to a group, as pure functions over the actor's role in it (undefined: not a
 * member). The pages, the API and the services all ask here, so the rule exists once.
 *
 * - An owner may do everything: settings, applications and their secrets, webhooks, resources (protected APIs), members of
 *   every role, the audit log, deleting the group.
 * - A maintainer looks after the membership: adds and removes members and maintainers, moves a
 *   member between those two roles, and reads the audit log. Ownership is the owners' own.
 * - A member reads the group.
 * Anyone in a group may leave it (the last owner excepted: see services/groups.ts).
 * The Members page says the same of each role in words: locales/<language>/groups.json, roles.
 */
export type GroupAction =
  | 'read'
  | 'leave'
  | 'manage-settings'
  | 'manage-members'
  | 'manage-apps'
  | 'manage-webhooks'
  | 'manage-resources'
  | 'read-audit'
  | 'delete-group';

const MAINTAINER_ACTIONS: ReadonlySet<GroupAction> = new Set(['read', 'leave', 'manage-members', 'read-audit']);

export function canGroup(role: Role | undefined, action: GroupAction): boolean {
  if (!role) return false;
  if (role === 'owner') return true;
  if (role === 'maintainer') return MAINTAINER_ACTIONS.has(action);
  return action === 'read' || action === 'leave';
}

/**
 * Whether the actor may move a member from one role to another, where both are known: `from`
 * undefined adds someone, `to` undefined removes them. Only an owner adds, removes, promotes to
 * or demotes from owner.
 */
export function canChangeMember(role: Role | undefined, change: { from?: Role; to?: Role }): boolean {
  if (!canGroup(role, 'manage-members')) return false;
  return role === 'owner' || (change.from !== 'owner' && change.to !== 'owner');
}
