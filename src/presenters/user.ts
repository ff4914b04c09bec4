import { z } from 'zod';
import type { UserRow } from '../db/users.js';
import type { UserFields } from '../policies/user-fields.js';
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

/**
 * The token's user as `GET /apis/v2/user` shows it: the id, and the fields `fields` allows
 * (policies/user-fields.ts). The address only once verified; `emailVerified` says whether it is.
 */
export const apiUserJson = z.object({
  id: recordId,
  username: z.string().optional().describe('With the `profile`, `groups:read-only` or `groups:read-write` scope, or a personal access token'),
  name: z.string().optional().describe('With the `profile`, `groups:read-only` or `groups:read-write` scope, or a personal access token'),
  email: z.string().optional().describe('With the `email` scope or a personal access token, and only once the address is verified'),
  emailVerified: z.boolean().optional().describe('Whether the account\'s address is verified; with the `email` scope or a personal access token'),
});
export type ApiUserJson = z.infer<typeof apiUserJson>;

export function presentApiUser(row: UserRow, fields: UserFields): ApiUserJson {
  const verified = Boolean(row.email_verified_at);
  return {
    id: Number(row.id),
    ...(fields.profile ? { username: row.username, name: row.name } : {}),
    ...(fields.email && verified ? { email: row.email } : {}),
    ...(fields.email ? { emailVerified: verified } : {}),
  };
}

/** A user as the site administrators' API lists it (never the password hash). */
export const adminUserJson = z.object({
  id: recordId,
  username: z.string(),
  email: z.string(),
  name: z.string(),
  admin: z.boolean().describe('Whether the user is a site administrator'),
  disabledAt: timestamp.nullable().describe('When an administrator disabled the account; null while it is enabled'),
  createdAt: timestamp,
});
export type AdminUserJson = z.infer<typeof adminUserJson>;

export function presentAdminUser(row: Pick<UserRow, 'id' | 'username' | 'email' | 'name' | 'is_admin' | 'disabled_at' | 'created_at'>): AdminUserJson {
  return {
    id: Number(row.id),
    username: row.username,
    email: row.email,
    name: row.name,
    admin: Boolean(row.is_admin),
    disabledAt: toIso(row.disabled_at),
    createdAt: toIso(row.created_at)!,
  };
}
