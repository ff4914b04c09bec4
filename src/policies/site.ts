import type { UserRow } from '../db/users.js';

type Account = Pick<UserRow, 'is_admin' | 'disabled_at'>;

/** Whether an administrator keeps the account disabled: it is refused everywhere a user is loaded. */
export function isDisabled(user: Account): boolean {
  return user.disabled_at !== null && user.disabled_at !== undefined;
}

/** A site administrator who may use the Admin area: flagged as one, and not disabled. */
export function isSiteAdmin(user: Account | null | undefined): boolean {
  return !!user && Boolean(user.is_admin) && !isDisabled(user);
}
