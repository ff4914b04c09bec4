import type { Knex } from 'knex';
import { z } from 'zod';
import { recordAudit } from '../../db/audit.js';
import { deleteIdentity, identitiesOf, waysInLocked } from '../../db/identities.js';
import { enabledSignInProviders, findSignInProvider, type SignInProviderRow } from '../../db/sign-in-providers.js';
import { replacePasswordHash, type UserRow } from '../../db/users.js';
import { AppError, NotFoundError, ValidationError } from '../../errors.js';
import { mayUnlink } from '../../policies/sign-in-methods.js';
import { now, toIso } from '../../time.js';
import { changing } from '../change-versions.js';
import { directoryKindOf, redirectKindOf } from './kinds.js';
import { listPasskeys } from '../passkeys.js';
import { hasPassword, type KdfQueue } from '../passwords.js';
import * as rules from '../rules.js';

/**
 * Account settings → Sign-in methods: the ways an account signs in (its password, its passkeys,
 * the upstream identities linked to it), setting a first password on an account made by an
 * upstream sign-in, and unlinking an identity, never the last way in.
 */

export interface LinkedIdentity {
  id: number;
  slug: string;
  providerName: string;
  /** The provider is disabled: the identity signs nobody in until it is enabled again. */
  providerDisabled: boolean;
  /** A directory's (LDAP): it keeps the account, and only removing the provider unlinks it. */
  directory: boolean;
  username: string;
  linkedAt: string | null;
  lastUsedAt: string | null;
}

export interface SignInMethods {
  password: boolean;
  passkeys: number;
  identities: LinkedIdentity[];
  /** Enabled providers the account has no identity from, in the sign-in page's order. */
  linkable: Pick<SignInProviderRow, 'slug' | 'name'>[];
}

export async function signInMethodsOf(db: Knex, user: UserRow): Promise<SignInMethods> {
  const [identities, passkeys, providers] = await Promise.all([identitiesOf(db, user.id), listPasskeys(db, user.id), enabledSignInProviders(db)]);
  const linked = new Set(identities.map((identity) => identity.provider_id));
  return {
    password: hasPassword(user.password_hash),
    passkeys: passkeys.length,
    identities: identities.map((row) => ({
      id: row.id,
      slug: row.slug,
      providerName: row.provider_name,
      providerDisabled: row.provider_disabled_at !== null,
      directory: directoryKindOf(row.kind) !== undefined,
      username: row.username,
      linkedAt: toIso(row.created_at),
      lastUsedAt: toIso(row.last_used_at),
    })),
    // A directory links itself at the first sign-in with its username and password.
    linkable: providers.filter((provider) => !linked.has(provider.id) && redirectKindOf(provider.kind)).map((provider) => ({ slug: provider.slug, name: provider.name })),
  };
}

/** Unlinking would leave the account no way to sign in (409). */
export class LastWayInError extends AppError {
  constructor(providerName: string) {
    super(409, 'last_sign_in_method', `${providerName} is the only way you can sign in to this account. Set a password or add a passkey first, then unlink it.`);
  }
}

/** A directory's identity is the directory's hold on the account: unlinking it would let someone who left keep it. */
export class DirectoryIdentityError extends AppError {
  constructor(providerName: string) {
    super(409, 'directory_identity', `Your account is kept by ${providerName}: it cannot be unlinked here. Ask a site administrator if it should no longer be.`);
  }
}

/**
 * Unlinks one of the account's identities, after checking, with the account's row locked, that a
 * password, a passkey or another identity of an enabled provider remains; recorded in the
 * account's audit trail in the same transaction. Returns the provider's slug and name.
 */
export async function unlinkIdentity(db: Knex, user: UserRow, identityId: number, ip: string): Promise<{ slug: string; providerName: string }> {
  const identity = (await identitiesOf(db, user.id)).find((row) => row.id === identityId);
  if (!identity) throw new NotFoundError('There is no such linked identity on your account.');
  if (directoryKindOf(identity.kind)) throw new DirectoryIdentityError(identity.provider_name);
  return db.transaction(async (trx) => {
    const ways = await waysInLocked(trx, user.id);
    if (!ways?.identities.some((row) => row.id === identityId)) throw new NotFoundError('There is no such linked identity on your account.');
    if (!mayUnlink({ password: hasPassword(ways.passwordHash), passkeys: ways.passkeys, identities: ways.identities }, identityId)) {
      throw new LastWayInError(identity.provider_name);
    }
    const removed = await deleteIdentity(trx, user.id, identityId);
    if (!removed) throw new NotFoundError('There is no such linked identity on your account.');
    await recordAudit(trx, {
      groupId: null,
      userId: user.id,
      actorId: user.id,
      action: 'user.identity.unlink',
      target: user.username,
      details: { provider: identity.slug, username: identity.username },
      ip,
    }, now());
    return { slug: identity.slug, providerName: identity.provider_name };
  });
}

const firstPasswordSchema = z
  .object({ username: z.string(), email: z.string(), password: rules.password })
  .refine(rules.passwordIsNotIdentity, { path: ['password'], message: 'password must not be your username or email' });

/** The account has a password already: it is changed on the Password page, with the current one. */
export class HasPasswordError extends AppError {
  constructor() {
    super(409, 'has_password', 'Your account has a password already: change it on the Password page.');
  }
}

/**
 * Sets the first password of an account that has none (made by an upstream sign-in), under the
 * rules of sign-up (length, not a common password, not the username or address), typed twice
 * alike. Only over the hash of no password that was read: a password set meanwhile (another tab,
 * a reset) wins, and this one is refused. Recorded in the account's audit trail.
 */
export async function setFirstPassword(
  deps: { db: Knex; kdf: KdfQueue },
  user: UserRow,
  input: { password: string; confirmation: string },
  ip: string,
): Promise<void> {
  if (hasPassword(user.password_hash)) throw new HasPasswordError();
  const parsed = firstPasswordSchema.safeParse({ username: user.username, email: user.email, password: input.password });
  const problems = parsed.success ? [] : rules.problemsOf(parsed.error.issues);
  if (input.confirmation !== input.password) problems.push({ field: 'password_confirmation', message: 'The two passwords do not match' });
  if (problems.length) throw rules.invalidFields(problems);
  const hash = await deps.kdf.hash(input.password);
  const replaced = await changing(deps.db, [`user:${user.id}`], () =>
    deps.db.transaction(async (trx) => {
      if (!(await replacePasswordHash(trx, user.id, user.password_hash, hash))) return false;
      await recordAudit(trx, { groupId: null, userId: user.id, actorId: user.id, action: 'user.password.set', target: user.username, ip }, now());
      return true;
    }),
  );
  if (!replaced) throw new ValidationError('password', 'Your account’s password was set meanwhile. Reload the page.');
}

/** A provider by its slug (as a page's address names it); undefined for a slug no provider has. */
export function signInProviderBySlug(db: Knex, slug: string): Promise<SignInProviderRow | undefined> {
  return slug.length > 0 && slug.length <= 40 ? findSignInProvider(db, slug) : Promise.resolve(undefined);
}
