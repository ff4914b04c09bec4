import type { UserRow } from '../db/users.js';
import { toIso } from '../time.js';

/** A user as the API and the CLI show it. The password hash never leaves the database. */
export interface UserJson {
  id: number;
  username: string;
  email?: string;
  name: string;
  createdAt: string;
}

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
