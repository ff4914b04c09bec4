import { z } from 'zod';
import type { UserRow } from '../db/users.js';
import { toIso } from '../time.js';
import { recordId } from '../ids.js';
import { timestamp } from './json.js';

/** A user as the API and the CLI show it. The password hash never leaves the database. */
export const userJson = z.object({
  id: recordId,
  username: z.string(),
  email: z.string().optional(),
  name: z.string(),
  createdAt: timestamp,
});
export type UserJson = z.infer<typeof userJson>;

/** `email: false` leaves the address out (an OAuth token without the `email` scope). */
export function presentUser(row: UserRow, options: { email?: boolean } = {}): UserJson {
  return {
    id: Number(row.id),
    username: row.username,
    ...(options.email === false ? {} : { email: row.email }),
    name: row.name,
    createdAt: toIso(row.created_at)!,
  };
}
