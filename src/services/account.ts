import type { Knex } from 'knex';
import type Provider from 'oidc-provider';
import { z } from 'zod';
import { deleteUserKeepingAudit, groupsOwnedOnlyBy, lockOwnedGroups, membershipsOf, updateUserProfile, type OwnedGroup } from '../db/account.js';
import { recordAudit } from '../db/audit.js';
import { listUserGrants } from '../db/grants.js';
import { replacePasswordHash, setUserLanguage, type UserRow } from '../db/users.js';
import { AppError, ValidationError } from '../errors.js';
import { LANGUAGES } from '../i18n.js';
import { now } from '../time.js';
import { changing } from './change-versions.js';
import { revokeGrant } from './grants.js';
import * as rules from './rules.js';
import { startEmailChange, takeEmailChangeMail, type EmailChangeDeps } from './email-change.js';
import { sendSecurityNotice } from './security-notices.js';
import { signOutEverywhere, type SeenFrom } from './sessions.js';
import { signIn, type SignInDeps } from './users.js';
import type { MailDeps } from './verification.js';

/**
 * What a signed-in person changes about their own account (Account settings → Profile,
 * Password, Delete account). Every change that a stolen session must not be able to make on its
 * own asks for the current password, checked as a sign-in is: the same limits count a wrong one.
 */

/** The current password field is wrong; counted against the account's sign-in limits. */
const WRONG_PASSWORD = 'The current password is incorrect.';

/**
 * Checks the account's current password as the sign-in forms do (limits first, then the hash in
 * the bounded queue); a ValidationError on `field` when it is wrong. A 429 or 503 passes through.
 * Returns the account's row as read for the check (the hash that was verified, not a cached one).
 */
export async function confirmPassword(deps: SignInDeps, user: UserRow, password: string, ip: string, field: string): Promise<UserRow> {
  if (!password) throw new ValidationError(field, 'Enter your current password.');
  const confirmed = await signIn(deps, { login: user.username, password, ip });
  if (confirmed?.id !== user.id) throw new ValidationError(field, WRONG_PASSWORD);
  return confirmed;
}

const profileSchema = z.object({ name: rules.personName, email: rules.email });

export interface ProfileChange {
  name: string;
  email: string;
  /** Needed only when the e-mail address changes. */
  currentPassword: string;
  /** The owner was confirmed another way (Confirm access, for an account without a password): no current password is asked. */
  confirmed?: boolean;
}

/**
 * Saves a new name, and asks for a new e-mail address: the current password first (a wrong one
 * is said to be wrong whatever the address), then the mail limits, then the name is saved and
 * a link goes to the new address in the background (see email-change.ts). The account keeps its
 * address until that link is followed; an address that differs only in letter case is saved at
 * once and stays verified. Returns whether a new address is waiting for its link.
 */
export async function updateProfile(
  deps: SignInDeps & EmailChangeDeps,
  user: UserRow,
  change: ProfileChange,
  from: SeenFrom & { ip: string },
): Promise<{ emailChangeStarted: boolean }> {
  const profile = rules.parse(profileSchema, { name: change.name, email: change.email });
  const newAddress = profile.email.toLowerCase() !== user.email.toLowerCase();
  // An account without a password proved its owner through Confirm access before this (`confirmed`).
  if (profile.email !== user.email && !change.confirmed) await confirmPassword(deps, user, change.currentPassword, from.ip, 'current_password');
  if (newAddress) await takeEmailChangeMail(deps, user.id, profile.email);
  await changing(deps.db, [`user:${user.id}`], () =>
    updateUserProfile(deps.db, user.id, { name: profile.name, email: newAddress ? user.email : profile.email, at: now() }),
  );
  if (newAddress) await startEmailChange(deps, user, profile.email, from);
  return { emailChangeStarted: newAddress };
}

export interface PasswordChange {
  currentPassword: string;
  password: string;
  confirmation: string;
}

const newPasswordSchema = z
  .object({ username: z.string(), email: z.string(), password: rules.password })
  .refine(rules.passwordIsNotIdentity, { path: ['password'], message: 'password must not be your username or email' });

/**
 * Changes the password: the new one must pass the password rules and be typed twice alike, the
 * current one must be right; then every other session of the account is signed out (the one
 * that asked, `currentSessionUid`, stays signed in), and a security notice goes to the address.
 */
export async function changePassword(
  deps: SignInDeps & MailDeps & { provider: Provider },
  user: UserRow,
  change: PasswordChange,
  context: { ip: string; userAgent: string; currentSessionUid?: string },
): Promise<void> {
  // Every problem of the form at once; the current password is checked (and counted) only then.
  const parsed = newPasswordSchema.safeParse({ username: user.username, email: user.email, password: change.password });
  const problems = parsed.success ? [] : rules.problemsOf(parsed.error.issues);
  if (change.confirmation !== change.password) {
    problems.push({ field: 'password_confirmation', message: 'The two passwords do not match' });
  }
  if (!change.currentPassword) problems.push({ field: 'current_password', message: 'Enter your current password.' });
  if (problems.length) throw rules.invalidFields(problems);
  const checked = await confirmPassword(deps, user, change.currentPassword, context.ip, 'current_password');
  const hash = await deps.kdf.hash(change.password);
  // Only over the hash that was just checked: a password changed meanwhile (another tab, a reset) wins.
  const replaced = await changing(deps.db, [`user:${user.id}`], () => replacePasswordHash(deps.db, user.id, checked.password_hash, hash));
  if (!replaced) {
    throw new ValidationError('current_password', 'Your password was changed meanwhile. Reload the page and try again.');
  }
  await signOutEverywhere(deps, user.id, { except: context.currentSessionUid });
  sendSecurityNotice(deps, user, 'password-changed', context);
}

/** Deleting the account is refused while it is the one owner of these groups (409). */
export class LastOwnerError extends AppError {
  constructor(readonly groups: OwnedGroup[]) {
    super(409, 'last_owner', `You are the only owner of ${groups.map((g) => g.name).join(', ')}. Make someone else an owner, or delete the group, first.`);
  }
}

/** The groups whose one owner this user is: deleting the account is refused while there are any. */
export function groupsOnlyOwnedBy(db: Knex, userId: number): Promise<OwnedGroup[]> {
  return groupsOwnedOnlyBy(db, userId);
}

/**
 * Deletes the account, after its password: every session (signed out on every instance), every
 * grant with its codes and OAuth tokens, every personal access token, then the user. The audit
 * trails keep the account's events, their actor shown as a deleted user, and each group the
 * account was a member of records its leaving (in the deletion's transaction). Refused (LastOwnerError)
 * while the account is the one owner of a group; the check is made again, with the groups'
 * rows locked, in the transaction that deletes, so a concurrent demotion cannot leave a group
 * without an owner.
 */
export async function deleteAccount(deps: SignInDeps & { provider: Provider }, user: UserRow, password: string, ip: string): Promise<void> {
  await confirmPassword(deps, user, password, ip, 'password');
  await deleteConfirmedAccount(deps, user, ip);
}

/**
 * The same, for an account whose owner the caller has just confirmed another way (an account
 * without a password, made by an upstream sign-in, confirms through Confirm access).
 */
export async function deleteConfirmedAccount(deps: SignInDeps & { provider: Provider }, user: UserRow, ip: string | null): Promise<void> {
  const owned = await groupsOwnedOnlyBy(deps.db, user.id);
  if (owned.length) throw new LastOwnerError(owned);
  await signOutEverywhere(deps, user.id);
  for (const grant of await listUserGrants(deps.db, user.id)) await revokeGrant(deps.provider, String(grant.grant_id));
  await changing(deps.db, [`user:${user.id}`], () =>
    deps.db.transaction(async (trx) => {
      await lockOwnedGroups(trx, user.id);
      const stillOwned = await groupsOwnedOnlyBy(trx, user.id);
      if (stillOwned.length) throw new LastOwnerError(stillOwned);
      const at = now();
      for (const { group_id: groupId, role } of await membershipsOf(trx, user.id)) {
        const details = { from: role, reason: 'account deleted' };
        await recordAudit(trx, { groupId: Number(groupId), actorId: user.id, action: 'member.remove', target: user.username, details, ip }, at);
      }
      await deleteUserKeepingAudit(trx, user.id);
    }),
  );
}

/**
 * Sets the language of the account's pages and mails: one of the site's languages, or '' for the
 * browser's (Accept-Language). A choice that changes nothing writes nothing.
 */
export async function setLanguage(db: Knex, user: UserRow, language: string): Promise<void> {
  if (language !== '' && !(LANGUAGES as readonly string[]).includes(language)) {
    throw new ValidationError('language', `Language must be one of: ${LANGUAGES.join(', ')}, or empty for the browser's`);
  }
  await changing(db, [`user:${user.id}`], () => setUserLanguage(db, user.id, language || null, now()));
}
