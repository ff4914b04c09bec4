import type { Knex } from 'knex';
import type Provider from 'oidc-provider';
import { findIdentity, setIdentitySuspended, type IdentityRow } from '../../db/identities.js';
import { findUserById } from '../../db/users.js';
import { isDisabled } from '../../policies/site.js';
import { now } from '../../time.js';
import { disableUser, enableUser } from '../admin.js';
import type { Actor } from '../context.js';
import type { UpstreamProvider } from '../federation/upstream.js';

/**
 * What the directory's word does to an account linked to it. A person it no longer finds, or
 * marks disabled, has their account disabled here: every session ended, every application's
 * grant and token revoked, every personal access token deleted (as an administrator's Disable
 * does), with the directory as the reason in the site's audit trail. When the directory finds
 * them active again, the account is enabled again (what was revoked stays revoked). An account
 * an administrator disabled is never enabled by the directory.
 */

/** The directory's changes have no person as actor: the audit trail says `via: directory`. */
const DIRECTORY_ACTOR: Actor = { userId: 0, ip: null, admin: false };

export interface AccountDeps {
  db: Knex;
  provider: Provider;
}

/** Why the directory ends an account. */
export type SuspendReason = 'not_found' | 'disabled';

/**
 * Disables the account linked through this identity, for the directory's reason; false when it
 * was disabled already (by the directory or by an administrator).
 */
export async function suspendIdentity(deps: AccountDeps, provider: UpstreamProvider, identity: IdentityRow, reason: SuspendReason): Promise<boolean> {
  const user = await findUserById(deps.db, identity.user_id);
  if (!user || isDisabled(user)) return false;
  await setIdentitySuspended(deps.db, identity.id, now());
  const { changed } = await disableUser(deps, DIRECTORY_ACTOR, user, { via: 'directory', provider: provider.slug, reason });
  return changed;
}

/** The same, found by the directory's unique ID; false when nobody here is linked to it. */
export async function suspendSubject(deps: AccountDeps, provider: UpstreamProvider, subject: string, reason: SuspendReason): Promise<boolean> {
  const identity = subject ? await findIdentity(deps.db, provider.id, subject) : undefined;
  return identity ? suspendIdentity(deps, provider, identity, reason) : false;
}

/** Enables again an account the directory disabled, now that it finds the person active; false when it did not disable it. */
export async function restoreIdentity(db: Knex, provider: UpstreamProvider, identity: IdentityRow): Promise<boolean> {
  if (!identity.suspended_at) return false;
  const user = await findUserById(db, identity.user_id);
  if (!user) return false;
  await setIdentitySuspended(db, identity.id, null);
  return enableUser(db, DIRECTORY_ACTOR, user, { via: 'directory', provider: provider.slug });
}
