import type { Knex } from 'knex';
import type { Account } from 'oidc-provider';
import { findUserById } from '../db/users.js';
import { parseId } from '../ids.js';
import { isDisabled } from '../policies/site.js';

/**
 * Accounts are rows of the users table; `sub` is the user's id as a string. A disabled account is
 * no account: the flow, the token endpoint and userinfo refuse it as they refuse a deleted one.
 */
export async function findAccount(db: Knex, sub: string): Promise<Account | undefined> {
  const id = parseId(sub);
  if (id === undefined) return undefined;
  const user = await findUserById(db, id);
  if (!user || isDisabled(user)) return undefined;
  return {
    accountId: sub,
    async claims() {
      return {
        sub,
        preferred_username: user.username,
        name: user.name || user.username,
        email: user.email,
        // Addresses are not verified by mail yet; say so rather than claim otherwise.
        email_verified: false,
      };
    },
  };
}
