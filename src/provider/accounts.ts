import type { Knex } from 'knex';
import type { Account } from 'oidc-provider';
import { parseId } from '../ids.js';
import { signedInUserById } from '../services/users.js';

/** An account of the provider, and whether its e-mail address was verified (for the authorization flow's check). */
export type IdpAccount = Account & { emailVerified: boolean };

/**
 * Accounts are rows of the users table; `sub` is the user's id as a string. A disabled account is
 * no account: the flow, the token endpoint and userinfo refuse it as they refuse a deleted one.
 * The row is the one the site's pages use (`signedInUserById`): with Redis it is kept per instance
 * and used while the account's version is unchanged (`services/change-versions.ts`: disabling,
 * enabling, deleting, a new name, address or password, a verified address all replace it), so the
 * token endpoint does not read the row on every request, and a flow reads it once for its pages
 * and the provider together. The claims are made of its name and address only.
 */
export function accountFinder(db: Knex): (sub: string) => Promise<IdpAccount | undefined> {
  return async function findAccount(sub) {
    const id = parseId(sub);
    if (id === undefined) return undefined;
    const user = await signedInUserById(db, id);
    if (!user) return undefined;
    const { username, name, email } = user;
    const emailVerified = Boolean(user.email_verified_at);
    return {
      accountId: sub,
      emailVerified,
      async claims() {
        return {
          sub,
          preferred_username: username,
          name: name || username,
          // An address is released only once a link mailed to it was followed: anyone can sign up
          // with someone else's address, and a relying party that links accounts by e-mail would
          // hand that person's account over ("nOAuth"). Until then `email_verified` is false and
          // no `email` comes with it, so the client learns the account has no verified address.
          ...(emailVerified ? { email } : {}),
          email_verified: emailVerified,
        };
      },
    };
  };
}
