import type { Knex } from 'knex';
import { z } from 'zod';
import { AppError, ConflictError, NotFoundError, ValidationError } from '../errors.js';
import { findUserById, findUserByLogin, findUserByUsername, insertUser, replacePasswordHash, userTakenField, type LoginRow, type UserRow } from '../db/users.js';
import { isUniqueViolation } from '../db/knex.js';
import { isDisabled } from '../policies/site.js';
import { now } from '../time.js';
import { changeVersionsOf, changing, type VersionedCache } from './change-versions.js';
import type { Limits } from './limits.js';
import { decoyHash, hashPassword, hasPassword, needsRehash, type KdfQueue } from './passwords.js';
import * as rules from './rules.js';

export const newUserSchema = z
  .object({
    username: rules.username,
    email: rules.email,
    name: rules.personName,
    password: rules.password,
  })
  .refine(rules.passwordIsNotIdentity, { path: ['password'], message: 'password must not be your username or email' });
export type NewUser = z.input<typeof newUserSchema>;

/**
 * Makes an account at once, for those who vouch for it: the CLI (an operator), the demo, the
 * tests. `emailVerified` says whether its address counts as proven from the start; the site's
 * own sign-up never comes here (see sign-up.ts: an address is proven by its link first).
 */
export async function createUser(db: Knex, input: NewUser, options: { emailVerified: boolean }): Promise<UserRow> {
  const data = rules.parse(newUserSchema, input);
  const taken = await userTakenField(db, data.username, data.email);
  if (taken) throw new ConflictError(taken, `${taken} "${taken === 'username' ? data.username : data.email}" is already taken`);
  const passwordHash = await hashPassword(data.password);
  try {
    return await insertUser(db, { ...data, passwordHash, at: now(), emailVerified: options.emailVerified });
  } catch (err) {
    // Two callers racing for one name: the unique index decides.
    if (isUniqueViolation(err)) {
      const field = (await userTakenField(db, data.username, data.email)) ?? 'username';
      throw new ConflictError(field, `${field} is already taken`);
    }
    throw err;
  }
}

export interface SignInDeps {
  db: Knex;
  limits: Limits;
  kdf: KdfQueue;
}

/** The right password for an account an administrator has disabled. */
export class AccountDisabledError extends AppError {
  constructor() {
    super(403, 'account_disabled', 'This account is disabled. Contact the site administrator.');
  }
}

/**
 * A password sign-in, on the site or in the authorization flow: the abuse limits first (a 429
 * even for the right password while blocked), then the password in the bounded KDF queue, with
 * the same work whether or not the account exists. A right password made with older hashing
 * parameters (scrypt) is rehashed with today's. Returns the user, or undefined when wrong; a
 * disabled account is refused with AccountDisabledError, only once the password was right, so
 * the refusal tells nothing to someone guessing.
 */
export async function signIn(deps: SignInDeps, attempt: { login: string; password: string; ip: string }): Promise<LoginRow | undefined> {
  const { db, limits, kdf } = deps;
  const login = attempt.login.trim();
  const { password, ip } = attempt;
  const plausible = login && password && login.length <= 254 && password.length <= 1024;
  const user = plausible ? await findUserByLogin(db, login) : undefined;
  // One account is one key whichever name it was given by; an unknown name is a key of its own.
  const account = user ? `user:${user.id}` : `login:${login.toLowerCase().slice(0, 254)}`;
  const counted = await limits.beforeSignIn(account, ip);
  // An account without a password (made by an upstream sign-in) is checked against the decoy, as
  // an unknown name is: it takes as long as a real check, and no password gets in.
  const usable = user && hasPassword(user.password_hash) ? user.password_hash : undefined;
  const verified = await kdf.verify(plausible ? password : '', usable ?? (await decoyHash())).catch(async (err: unknown) => {
    await limits.signInNotChecked(counted);
    throw err;
  });
  const ok = verified && usable !== undefined;
  if (!user || !ok) {
    await limits.signInFailed(counted);
    return undefined;
  }
  await limits.signInSucceeded(counted);
  if (isDisabled(user)) throw new AccountDisabledError();
  if (needsRehash(user.password_hash)) {
    // Best effort: a busy queue leaves the old hash for the next sign-in.
    const rehashed = await kdf.hash(password).catch(() => undefined);
    if (rehashed) await changing(db, [`user:${user.id}`], () => replacePasswordHash(db, user.id, user.password_hash, rehashed));
  }
  return user;
}

/** A user by id; undefined once the account is gone. */
export function userById(db: Knex, id: number): Promise<UserRow | undefined> {
  return findUserById(db, id);
}

const signedInUsers = new WeakMap<Knex, VersionedCache<UserRow | undefined>>();

/** The account's row, unless it is gone or disabled. */
async function activeUser(db: Knex, id: number): Promise<UserRow | undefined> {
  const user = await findUserById(db, id);
  return user && !isDisabled(user) ? user : undefined;
}

/**
 * The accounts of `db`'s process (the pages' signed-in user, the provider's account at authorize,
 * the token endpoint and userinfo), cached under the account's version when it has Redis (see
 * `change-versions.ts`): every change of the row replaces it (name, address, verification,
 * password, site administration, disabled, deleted), so nothing acts on a stale account on any
 * instance. An entry is frozen: it is shared by the requests that use it.
 */
function signedInUserCache(db: Knex): VersionedCache<UserRow | undefined> | undefined {
  let cache = signedInUsers.get(db);
  if (!cache) {
    cache = changeVersionsOf(db)?.cache(async (key) => {
      const user = await activeUser(db, Number(key));
      return user && Object.freeze(user);
    });
    if (cache) signedInUsers.set(db, cache);
  }
  return cache;
}

/** The user a session is signed in as; undefined once the account is gone or while it is disabled. */
export function signedInUserById(db: Knex, id: number): Promise<UserRow | undefined> {
  const cache = signedInUserCache(db);
  return cache ? cache.get(String(id), [`user:${id}`]) : activeUser(db, id);
}

export async function requireUserByUsername(db: Knex, username: string, field = 'user'): Promise<UserRow> {
  if (!username) throw new ValidationError(field, `${field} is required`);
  const user = await findUserByUsername(db, username);
  if (!user) throw new NotFoundError(`no user "${username}"`);
  return user;
}
