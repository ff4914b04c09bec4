import { z } from 'zod';
import type { GroupRow } from '../db/groups.js';
import { toIso } from '../time.js';
import { recordId } from '../ids.js';
import { ROLES, VISIBILITY_LEVELS, type Role } from '../vocabulary.js';
import { timestamp } from './json.js';
import { maxLifetimeDays } from '../policies/token-lifetime.js';

/** A group as the API names its fields; `role` (the viewer's) only when given. */
export const groupJson = z.object({
  id: recordId,
  name: z.string(),
  path: z.string(),
  description: z.string(),
  visibilityLevel: z.enum(VISIBILITY_LEVELS),
  requireTwoFactor: z.boolean().describe('Members need two-factor authentication on to use the group (its routes answer 403 two_factor_required otherwise)'),
  personalTokenMaxLifetimeDays: maxLifetimeDays,
  createdAt: timestamp,
  updatedAt: timestamp,
  role: z.enum(ROLES).describe("The caller's role in the group: an owner may do everything; a maintainer adds and removes members and maintainers and reads the audit log; a member reads the group").optional(),
});
export type GroupJson = z.infer<typeof groupJson>;

export function presentGroup(row: GroupRow, role?: Role): GroupJson {
  return {
    id: Number(row.id),
    name: row.name,
    path: row.path,
    description: row.description,
    visibilityLevel: row.visibility_level,
    requireTwoFactor: Boolean(row.require_two_factor),
    personalTokenMaxLifetimeDays: row.personal_token_max_lifetime_days === null ? null : Number(row.personal_token_max_lifetime_days),
    createdAt: toIso(row.created_at)!,
    updatedAt: toIso(row.updated_at)!,
    ...(role ? { role } : {}),
  };
}
