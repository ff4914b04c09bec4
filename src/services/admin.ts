import type { Knex } from 'knex';
import type Provider from 'oidc-provider';
import { deleteAccessTokensOf } from '../db/access-tokens.js';
import { listSiteAudit, markUserDisabled, markUserEnabled, searchUsers, setUserAdmin, type AdminUserRow } from '../db/admin.js';
import { auditEventBatches, listAuditEvents, recordAudit, type AuditAction, type AuditFilter, type AuditRow } from '../db/audit.js';
import { findUserById, type UserRow } from '../db/users.js';
import { AppError, NotFoundError, UnavailableError } from '../errors.js';
import { now } from '../time.js';
import { changing } from './change-versions.js';
import { auditActorId, type Actor } from './context.js';
import { listPasskeys } from './passkeys.js';
import { removeTwoFactor, twoFactorStatus } from './two-factor.js';
import { authorizedApplicationsOf, revokeUserGrant } from './grants.js';
import { sendPasswordReset as mailPasswordReset } from './password-reset.js';
import { signOutEverywhere } from './sessions.js';
import type { MailDeps } from './verification.js';

/**
 * Site administration: who administers the site, disabling and enabling accounts, and the admin
 * audit log. Every change is recorded in the site's audit trail (events of no group) in the
 * transaction that makes it, with the administrator as actor, or none and `via: cli` for the CLI.
 */

/** What disabling needs besides the database: the provider's storage of sessions, grants and tokens. */
export interface AdminDeps {
  db: Knex;
  provider: Provider;
}

export interface Listing<T> {
  total: number;
  items: T[];
}

type Account = Pick<UserRow, 'id' | 'username'>;

/** Who, besides a person, made a change: the CLI (`via: cli`), or a directory that no longer finds the person (`via: directory`). */
export type Via = { via: 'directory'; provider: string; reason?: string };

function recordSiteAudit(db: Knex, actor: Actor, action: AuditAction, user: Account, at: string, via?: Via): Promise<void> {
  return recordAudit(db, {
    groupId: null,
    actorId: via ? null : auditActorId(actor),
    action,
    target: user.username,
    details: via ?? (actor.admin ? { via: 'cli' } : {}),
    ip: actor.ip,
  }, at);
}

/** Users matching a search (username, e-mail or name), for the Admin area's list. */
export function findUsers(db: Knex, query: string, page: { limit: number; offset: number }): Promise<Listing<AdminUserRow>> {
  return searchUsers(db, query.trim().slice(0, 254), page);
}

/** One user for the Admin area's user page; 404 when there is none. */
export async function requireUserById(db: Knex, id: number): Promise<UserRow> {
  const user = await findUserById(db, id);
  if (!user) throw new NotFoundError('There is no such user.');
  return user;
}

/** The site's audit trail, newest first. */
export function siteAuditLog(db: Knex, page: { limit: number; offset: number }): Promise<Listing<AuditRow>> {
  return listSiteAudit(db, page);
}

/** A page of the site's audit trail matching `filter`, newest first. */
export function siteAuditEvents(db: Knex, filter: AuditFilter, page: { limit: number; offset: number }): Promise<Listing<AuditRow>> {
  return listAuditEvents(db, 'site', filter, page);
}

/** The whole of the site's audit trail matching `filter`, newest first, a batch at a time. */
export function siteAuditExport(db: Knex, filter: AuditFilter = {}): AsyncGenerator<AuditRow[]> {
  return auditEventBatches(db, 'site', filter);
}

/** Makes a user a site administrator, or no longer one; false when it already was so. */
export async function setSiteAdmin(db: Knex, actor: Actor, user: UserRow, admin: boolean): Promise<boolean> {
  if (Boolean(user.is_admin) === admin) return false;
  // Pages cache the signed-in account: a new version makes every instance read the change at once.
  await changing(db, [`user:${user.id}`], () =>
    db.transaction(async (trx) => {
      const at = now();
      await setUserAdmin(trx, user.id, admin);
      await recordSiteAudit(trx, actor, admin ? 'user.admin.grant' : 'user.admin.revoke', user, at);
    }),
  );
  return true;
}

/** What disabling an account took from it. */
export interface Disabled {
  /** False when the account was disabled already (its sessions, grants and tokens are revoked again). */
  changed: boolean;
  grants: number;
  accessTokens: number;
}

/**
 * Disables an account: marked first (from then on it is refused wherever a user is loaded), then
 * signed out of every session, its grants revoked with every code and OAuth token under them,
 * and its personal access tokens deleted. Disabling an account that is disabled already does the
 * revoking again, so a run cut short can be completed. An administrator cannot disable their own
 * account from the Admin area.
 */
export async function disableUser(deps: AdminDeps, actor: Actor, user: Pick<UserRow, 'id' | 'username'>, via?: Via): Promise<Disabled> {
  if (!actor.admin && actor.userId === user.id) {
    throw new AppError(409, 'conflict', 'You cannot disable your own account.');
  }
  const changed = await changing(deps.db, [`user:${user.id}`], () =>
    deps.db.transaction(async (trx) => {
      const at = now();
      if (!(await markUserDisabled(trx, user.id, at))) return false;
      await recordSiteAudit(trx, actor, 'user.disable', user, at, via);
      return true;
    }),
  );
  await signOutEverywhere(deps, user.id);
  const grants = await revokeEveryGrant(deps, user.id);
  const accessTokens = await deleteAccessTokensOf(deps.db, user.id);
  return { changed, grants, accessTokens };
}

/** Revokes every application a user authorized, with its codes and tokens; how many. */
async function revokeEveryGrant(deps: AdminDeps, userId: number): Promise<number> {
  const listed = await authorizedApplicationsOf(deps.db, userId);
  for (const row of listed) {
    await revokeUserGrant(deps.db, deps.provider, userId, String(row.client_id)).catch((err: unknown) => {
      // A grant revoked meanwhile (by its user or another administrator) is no longer listed.
      if (!(err instanceof NotFoundError)) throw err;
    });
  }
  return listed.length;
}

/** Lets a disabled account sign in again (what disabling revoked stays revoked); false when it was enabled. */
export async function enableUser(db: Knex, actor: Actor, user: Pick<UserRow, 'id' | 'username'>, via?: Via): Promise<boolean> {
  return changing(db, [`user:${user.id}`], () =>
    db.transaction(async (trx) => {
      const at = now();
      if (!(await markUserEnabled(trx, user.id))) return false;
      await recordSiteAudit(trx, actor, 'user.enable', user, at, via);
      return true;
    }),
  );
}

/**
 * Mails the account a password reset link (1 h, single use), as Forgot password would; the
 * current password keeps working until the link is used. Recorded once the mail went out; a mail
 * server that refuses is a 503.
 */
export async function sendPasswordReset(deps: MailDeps, actor: Actor, user: UserRow): Promise<void> {
  try {
    await mailPasswordReset(deps, user);
  } catch (err) {
    deps.log.error({ err, userId: user.id }, 'password reset mail not sent');
    throw new UnavailableError('The e-mail could not be sent right now. Try again in a few minutes.');
  }
  await recordSiteAudit(deps.db, actor, 'user.password_reset.send', user, now());
}

/**
 * Turns off a person's two-factor authentication (their app, recovery codes and passkeys: they
 * may be on the lost device), for someone who lost them; they sign in with their password alone
 * and can set it up again. Audited as the administrator's act. False when there was nothing.
 */
export async function resetTwoFactor(db: Knex, actor: Actor, user: UserRow): Promise<boolean> {
  const [status, passkeys] = await Promise.all([twoFactorStatus(db, user.id), listPasskeys(db, user.id)]);
  if (!status.enabled && !status.pending && !passkeys.length) return false;
  await removeTwoFactor(db, user, { actorId: auditActorId(actor), ip: actor.ip, action: 'user.two_factor.reset' }, { passkeys: true });
  return true;
}
