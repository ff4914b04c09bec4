import type { Role } from '../vocabulary.js';

/**
 * Who may do what to a group, as pure functions over the actor's role in it (undefined: not a
 * member). The pages, the API and the services all ask here, so the rule exists once.
 */
export type GroupAction =
  | 'read'
  | 'manage-settings'
  | 'manage-members'
  | 'manage-apps'
  | 'read-audit'
  | 'delete-group';

export function canGroup(role: Role | undefined, action: GroupAction): boolean {
  if (!role) return false;
  if (action === 'read') return true;
  return role === 'owner';
}
