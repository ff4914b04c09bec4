import type { UserRow } from '../db/users.js';

/**
 * What a signed-in person may change about their own account, and when they must prove again
 * that they are its owner. Pure: the pages load the facts and ask here.
 */

/**
 * The changes that would let someone holding a stolen session keep or widen their access. Each
 * needs the password (or a second factor, or a passkey) given in this session within the last
 * CONFIRMATION_WINDOW_MS; a sign-in is such a proof too. A route for a new kind of change of this
 * sort (linking or unlinking a sign-in method, say) names it here and asks for it.
 */
export type SensitiveAction =
  | 'add-passkey'
  | 'remove-passkey'
  | 'turn-on-two-factor'
  | 'turn-off-two-factor'
  | 'recovery-codes'
  | 'create-token'
  | 'change-email'
  | 'delete-account'
  | 'link-sign-in-method'
  | 'unlink-sign-in-method'
  | 'set-password';

/** How long a proof of the owner counts in its session (GitHub's sudo mode lasts as long). */
export const CONFIRMATION_WINDOW_MS = 10 * 60_000;

/**
 * Whether a session whose person last proved who they are at `lastProofMs` (milliseconds since
 * the epoch: the sign-in, or a confirmation since) may make a sensitive change at `atMs`. A proof
 * dated in the future (a clock moved back) counts only up to the window's length from now.
 */
export function recentlyConfirmed(lastProofMs: number | undefined, atMs: number): boolean {
  if (lastProofMs === undefined || !Number.isFinite(lastProofMs)) return false;
  return atMs - lastProofMs < CONFIRMATION_WINDOW_MS && lastProofMs - atMs < CONFIRMATION_WINDOW_MS;
}

type Account = Pick<UserRow, 'email_verified_at'>;

/**
 * Whether the account may add a way in (a passkey, an authenticator app, a personal access
 * token). Where the site requires verified addresses, not before its address is verified: an
 * account someone made with another person's address must not gather credentials the owner of
 * the address would then have to find and remove.
 */
export function mayAddCredentials(user: Account, requireVerifiedEmail: boolean): boolean {
  return !requireVerifiedEmail || Boolean(user.email_verified_at);
}
