import type { GroupRow } from '../db/groups.js';
import { toIso } from '../time.js';
import type { Role } from '../vocabulary.js';

/** A group as the API names its fields; `role` (the viewer's) only when given. */
export interface GroupJson {
  id: number;
  name: string;
  path: string;
  description: string;
  visibilityLevel: GroupRow['visibility_level'];
  createdAt: string;
  updatedAt: string;
  role?: Role;
}

export function presentGroup(row: GroupRow, role?: Role): GroupJson {
  return {
    id: Number(row.id),
    name: row.name,
    path: row.path,
    description: row.description,
    visibilityLevel: row.visibility_level,
    createdAt: toIso(row.created_at)!,
    updatedAt: toIso(row.updated_at)!,
    ...(role ? { role } : {}),
  };
}
