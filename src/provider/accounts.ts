import type { Knex } from 'knex';
import type { Account } from 'oidc-provider';
import { findUserById } from '../db/users.js';

/** Accounts are rows of the users table; `sub` is the user's id as a string. */
export async function findAccount(db: Knex, sub: string): Promise<Account | undefined> {
  if (!/^[1-9][0-9]{0,15}$/.test(sub)) return undefined;
  const user = await findUserById(db, Number(sub));
  if (!user) return undefined;
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
