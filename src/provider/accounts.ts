import type { Knex } from 'knex';
import type { Account } from 'oidc-provider';
import { findUserById } from '../db/users.js';
import { parseId } from '../ids.js';
import { isDisabled } from '../policies/site.js';
import { changeVersionsOf } from '../services/change-versions.js';

/** An account of the provider, and whether its e-mail address was verified (for the authorization flow's check). */
export type IdpAccount = Account & { emailVerified: boolean };

/** What an account's claims and the flow's checks need of its row: never its password hash. */
interface AccountFacts {
  username: string;
  name: string;
  email: string;
  emailVerified: boolean;
}

/**
 * Accounts are rows of the users table; `sub` is the user's id as a string. A disabled account is
 * no account: the flow, the token endpoint and userinfo refuse it as they refuse a deleted one.
 * With Redis, what a row says is kept per instance and used while the account's version is
 * unchanged (`services/change-versions.ts`: disabling, enabling, deleting, a new name or address,
 * a verified address all replace it), so the token endpoint does not read the row on every request.
 */
export function accountFinder(db: Knex): (sub: string) => Promise<IdpAccount | undefined> {
  const load = async (key: string): Promise<AccountFacts | undefined> => {
    const user = await findUserById(db, Number(key));
    if (!user || isDisabled(user)) return undefined;
    return { username: user.username, name: user.name, email: user.email, emailVerified: Boolean(user.email_verified_at) };
  };
  const cached = changeVersionsOf(db)?.cache(load);
  return async function findAccount(sub) {
    const id = parseId(sub);
    if (id === undefined) return undefined;
    const facts = cached ? await cached.get(String(id), [`user:${id}`]) : await load(String(id));
    if (!facts) return undefined;
    const { emailVerified } = facts;
    return {
      accountId: sub,
      emailVerified,
      async claims() {
        return {
          sub,
          preferred_username: facts.username,
          name: facts.name || facts.username,
          email: facts.email,
          // True only once a link mailed to this very address was followed.
          email_verified: emailVerified,
        };
      },
    };
  };
}
