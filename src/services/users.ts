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
  /** The directories (LDAP) that check a username and password the site's own accounts do not know. */
  directories?: DirectoryCheck;
}

/** The right password for an account an administrator has disabled. */
export class AccountDisabledError extends AppError {
  constructor(message = 'This account is disabled. Contact the site administrator.') {
    super(403, 'account_disabled', message);
  }
}

/**
 * The directory to ask was down or did not answer, so the password could not be checked. Not a
 * 5xx: this server works, and a 5xx would page its operators for the directory's outage.
 */
export class DirectoryUnavailableError extends AppError {
  readonly retryAfterS = 30;

  constructor(message: string) {
    super(424, 'directory_unavailable', message);
  }
}

/** The right directory password, for a person who cannot sign in here (no account may be made, say). */
export class DirectoryRefusedError extends AppError {
  constructor(status: number, message: string) {
    super(status, 'directory_refused', message);
  }
}

/** What a directory said of a username and password. */
export type DirectoryOutcome =
  | { outcome: 'signed-in'; user: LoginRow }
  | { outcome: 'wrong-password' }
  | { outcome: 'not-found' }
  /** The password was right (or could not be, the entry being locked) and the entry or the account is disabled. */
  | { outcome: 'disabled'; message: string }
  /** The password was right, and the person cannot sign in here: the message says why. */
  | { outcome: 'refused'; status: number; message: string }
  | { outcome: 'unavailable'; message: string };

/** Sign-in with a directory's username and password (services/directory). */
export interface DirectoryCheck {
  /** Whether an enabled directory provider exists. */
  configured(): Promise<boolean>;
  check(attempt: { login: string; password: string; ip: string }): Promise<DirectoryOutcome>;
}

/**
 * A password sign-in, on the site or in the authorization flow: the abuse limits first (a 429
 * even for the right password while blocked), then the password in the bounded KDF queue, with
 * the same work whether or not the account exists. A right password made with older hashing
 * parameters (scrypt) is rehashed with today's. Returns the user, or undefined when wrong; a
 * disabled account is refused with AccountDisabledError, only once the password was right, so
 * the refusal tells nothing to someone guessing.
 *
 * With a directory (LDAP) configured, a login the account's own password does not sign in (no
 * such account, an account without a password, or another password) is asked of the directories:
 * still one attempt against the same limits. A directory that could not be asked is
 * DirectoryUnavailableError, and the attempt is not counted unless a password was checked here.
 */
export async function signIn(deps: SignInDeps, attempt: { login: string; password: string; ip: string }): Promise<LoginRow | undefined> {
  const { db, limits, kdf } = deps;
  const login = attempt.login.trim();
  const { password, ip } = attempt;
  const plausible = login && password && login.length <= rules.MAX_LOGIN_LENGTH && password.length <= 1024;
  const user = plausible ? await findUserByLogin(db, login) : undefined;
  // One account is one key whichever name it was given by; an unknown name is a key of its own.
  const account = user ? `user:${user.id}` : `login:${login.toLowerCase().slice(0, rules.MAX_LOGIN_LENGTH)}`;
  const counted = await limits.beforeSignIn(account, ip);
  const usable = user && hasPassword(user.password_hash) ? user.password_hash : undefined;
  // Asked only when this service's own password cannot sign the person in: a local sign-in costs no query more.
  const directoriesFor = async () => (plausible && deps.directories && (await deps.directories.configured()) ? deps.directories : undefined);
  const directories = usable ? undefined : await directoriesFor();
  if (directories) {
    // No password of this service to check: the directory's is the one.
    return directorySignIn(deps, directories, counted, { login, password, ip }, { checkedHere: false });
  }
  // An account without a password (made by an upstream sign-in) is checked against the decoy, as
  // an unknown name is: it takes as long as a real check, and no password gets in.
  const verified = await kdf.verify(plausible ? password : '', usable ?? (await decoyHash())).catch(async (err: unknown) => {
    await limits.signInNotChecked(counted);
    throw err;
  });
  const ok = verified && usable !== undefined;
  if (!user || !ok) {
    const directories = await directoriesFor();
    if (directories) return directorySignIn(deps, directories, counted, { login, password, ip }, { checkedHere: true });
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

/** The directories' answer to one attempt, counted against the limits as a password checked here would be. */
async function directorySignIn(
  deps: SignInDeps,
  directories: DirectoryCheck,
  counted: Awaited<ReturnType<Limits['beforeSignIn']>>,
  attempt: { login: string; password: string; ip: string },
  options: { checkedHere: boolean },
): Promise<LoginRow | undefined> {
  const { limits } = deps;
  const answer = await directories.check(attempt).catch(async (err: unknown) => {
    if (options.checkedHere) await limits.signInFailed(counted);
    else await limits.signInNotChecked(counted);
    throw err;
  });
  switch (answer.outcome) {
    case 'signed-in':
      await limits.signInSucceeded(counted);
      return answer.user;
    case 'not-found':
      // Nobody by that name anywhere: as long as a wrong password for a known name takes.
      if (!options.checkedHere) await deps.kdf.verify(attempt.password, await decoyHash()).catch(() => false);
      await limits.signInFailed(counted);
      return undefined;
    case 'wrong-password':
      await limits.signInFailed(counted);
      return undefined;
    case 'disabled':
      // Said only after the directory took the password, as for an account disabled here.
      await limits.signInSucceeded(counted);
      throw new AccountDisabledError(answer.message);
    case 'refused':
      await limits.signInSucceeded(counted);
      throw new DirectoryRefusedError(answer.status, answer.message);
    case 'unavailable':
      if (options.checkedHere) await limits.signInFailed(counted);
      else await limits.signInNotChecked(counted);
      throw new DirectoryUnavailableError(answer.message);
  }
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
