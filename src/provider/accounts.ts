import type { Knex } from 'knex';
import type { Account } from 'oidc-provider';
import { findUserById } from '../db/users.js';
import { parseId } from '../ids.js';
import { isDisabled } from '../policies/site.js';

/** An account of the provider, and whether its e-mail address was verified (for the authorization flow's check). */
export type IdpAccount = Account & { emailVerified: boolean };

/**
 * Accounts are rows of the users table; `sub` is the user's id as a string. A disabled account is
 * no account: the flow, the token endpoint and userinfo refuse it as they refuse a deleted one.
 */
export async function findAccount(db: Knex, sub: string): Promise<IdpAccount | undefined> {
  const id = parseId(sub);
  if (id === undefined) return undefined;
  const user = await findUserById(db, id);
  if (!user || isDisabled(user)) return undefined;
  const emailVerified = Boolean(user.email_verified_at);
  return {
    accountId: sub,
    emailVerified,
    async claims() {
      return {
        sub,
        preferred_username: user.username,
        name: user.name || user.username,
        email: user.email,
        // True only once a link mailed to this very address was followed.
        email_verified: emailVerified,
      };
    },
  };
}
