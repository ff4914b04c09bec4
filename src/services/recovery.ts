import { hash } from 'node:crypto';
import { findUserById, type UserRow } from '../db/users.js';
import { AppError, NotFoundError, ValidationError } from '../errors.js';
import { toIso } from '../time.js';
import { accessTokensOf, revokeAccessToken } from './access-tokens.js';
import { authorizedApplicationsOf, revokeUserGrant } from './grants.js';
import { listPasskeys, removePasskey } from './passkeys.js';
import { listSessions, signOutEverywhere, signOutSession, type SessionDeps } from './sessions.js';
import { twoFactorStatus } from './two-factor.js';

/**
 * What a person sees right after setting a new password through a reset link: everything else
 * that can reach the account (passkeys, personal access tokens, authorized applications,
 * sessions), each with Remove, and Remove all, so that whoever had the account before cannot
 * stay in through a way the password does not close.
 *
 * The browser that made the reset holds a recovery pass for RECOVERY_MS: a signed cookie naming
 * the account and a stamp of the password the reset set. It is not a sign-in (with two-factor on,
 * signing in still takes the second factor) and only removes; another reset or password change
 * ends it, since the stamp no longer matches.
 *
 * Two-factor authentication (the authenticator app and its recovery codes) is not offered here:
 * a reset link proves only that someone reads the mailbox, and the second factor exists for the
 * day someone other than the owner does. Were it removable here, the mailbox alone would turn
 * two-factor off. Whoever lost the second factor as well asks an administrator (Reset
 * two-factor). An account whose address was never verified is different: nothing on it was
 * added by a proven owner, so the reset itself clears it all (password-reset.ts).
 */
export const RECOVERY_MS = 15 * 60_000;

/** A stamp of the password a reset set; the pass holds it, so that a later password change ends the pass. */
export function passwordStamp(passwordHash: string): string {
  return hash('sha256', `recovery\0${passwordHash}`, 'base64url').slice(0, 22);
}

/** The account a pass names, while its password is still the one the reset set. */
export async function recoveringAccount(db: SessionDeps['db'], userId: number, stamp: string): Promise<UserRow | undefined> {
  const user = await findUserById(db, userId);
  return user && passwordStamp(user.password_hash) === stamp ? user : undefined;
}

/** What the page lists, in the words and fields it shows. */
export async function recoveryView(deps: SessionDeps, userId: number) {
  const [passkeys, tokens, applications, sessions, twoFactor] = await Promise.all([
    listPasskeys(deps.db, userId),
    accessTokensOf(deps.db, userId),
    authorizedApplicationsOf(deps.db, userId),
    listSessions(deps, userId),
    twoFactorStatus(deps.db, userId),
  ]);
  return {
    passkeys: passkeys.map((p) => ({ id: String(p.id), name: p.name, createdAt: toIso(p.created_at), lastUsedAt: toIso(p.last_used_at) })),
    tokens: tokens.map((t) => ({ id: String(t.id), name: t.name, scopes: String(t.scopes).split(' ').filter(Boolean), createdAt: toIso(t.created_at), lastUsedAt: toIso(t.last_used_at) })),
    applications: applications.map((a) => ({ id: String(a.client_id), name: String(a.app_name), groupName: String(a.group_name), scopes: String(a.scopes).split(' ').filter(Boolean), lastUsedAt: toIso(a.last_used_at) })),
    sessions: sessions.map((s) => ({ id: s.uid, ip: s.ip ?? '', userAgent: s.user_agent, lastSeenAt: toIso(s.last_seen_at) })),
    twoFactor: twoFactor.enabled,
  };
}

export const RECOVERY_ITEMS = ['passkey', 'token', 'application', 'session'] as const;
export type RecoveryItem = (typeof RECOVERY_ITEMS)[number];

function recordId(id: string): number {
  const n = /^[1-9][0-9]{0,9}$/.test(id) ? Number(id) : NaN;
  if (!Number.isSafeInteger(n) || n > 2_147_483_647) throw new NotFoundError('There is no such item on the account.');
  return n;
}

/** Removes one thing the page listed; 404 when the account has no such thing (any more). */
export async function removeForRecovery(deps: SessionDeps, user: UserRow, item: string, id: string, ip: string | null): Promise<void> {
  switch (item as RecoveryItem) {
    case 'passkey':
      await removePasskey(deps.db, user, recordId(id), ip);
      return;
    case 'token':
      return revokeAccessToken(deps.db, user.id, recordId(id));
    case 'application':
      return revokeUserGrant(deps.db, deps.provider, user.id, id);
    case 'session':
      return signOutSession(deps, user.id, id);
    default:
      throw new ValidationError('item', `item must be one of ${RECOVERY_ITEMS.join(', ')}`);
  }
}

/** Remove all: every passkey, personal access token, authorized application (with its tokens) and session. */
export async function removeAllForRecovery(deps: SessionDeps, user: UserRow, ip: string | null): Promise<void> {
  const gone = (err: unknown) => {
    // Removed meanwhile (another tab, another request): what was asked is done.
    if (!(err instanceof AppError && err.status === 404)) throw err;
  };
  for (const passkey of await listPasskeys(deps.db, user.id)) await removePasskey(deps.db, user, passkey.id, ip).catch(gone);
  for (const token of await accessTokensOf(deps.db, user.id)) await revokeAccessToken(deps.db, user.id, Number(token.id)).catch(gone);
  await revokeEveryApplication(deps, user.id);
  await signOutEverywhere(deps, user.id);
}

/** Revokes every application the account authorized, with every code and token of its grant. */
export async function revokeEveryApplication(deps: SessionDeps, userId: number): Promise<number> {
  const listed = await authorizedApplicationsOf(deps.db, userId);
  for (const row of listed) {
    await revokeUserGrant(deps.db, deps.provider, userId, String(row.client_id)).catch((err: unknown) => {
      if (!(err instanceof NotFoundError)) throw err;
    });
  }
  return listed.length;
}
