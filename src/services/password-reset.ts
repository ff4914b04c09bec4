import type { Knex } from 'knex';
import { z } from 'zod';
import { clearCredentials } from '../db/account.js';
import { recordAudit } from '../db/audit.js';
import { retireEmailChanges } from '../db/email-changes.js';
import { findUserById, findUserByLogin, markEmailVerified, setPasswordHash, type UserRow } from '../db/users.js';
import { ValidationError } from '../errors.js';
import { type Language, translator } from '../i18n.js';
import { now } from '../time.js';
import { changing } from './change-versions.js';
import { issueLink, LinkRefusedError, retireLinks, usableLink, useLink } from './account-links.js';
import type { Limits } from './limits.js';
import type { KdfQueue } from './passwords.js';
import { revokeEveryApplication } from './recovery.js';
import { sendSecurityNotice } from './security-notices.js';
import { signOutEverywhere, type SeenFrom, type SessionDeps } from './sessions.js';
import * as rules from './rules.js';
import type { MailDeps } from './verification.js';

const addressSchema = z.object({ email: rules.email });

/**
 * "Forgot password?": after the limits (per address asked about and per client address), the
 * lookup and the mail happen in the background, so the answer, and the time it takes, are the
 * same whether or not an account has this address.
 */
export async function requestPasswordReset(deps: MailDeps & { limits: Limits }, input: { email: string; ip: string; returnTo?: string; lang?: Language }): Promise<void> {
  const { email } = rules.parse(addressSchema, { email: input.email });
  await deps.limits.takePasswordReset(email, input.ip);
  mailResetLink(deps, email, input.returnTo, input.lang).catch((err: unknown) => deps.log.error({ err }, 'password reset mail not sent'));
}

async function mailResetLink(deps: MailDeps, email: string, returnTo?: string, lang?: Language): Promise<void> {
  const user = await findUserByLogin(deps.db, email);
  if (user) await sendPasswordReset(deps, user, returnTo, lang);
}

/**
 * Mails `user` a password-reset link (1 h, single use); also for an administrator sending one.
 * `returnTo` (a same-site path: the authorization flow the person asked from) is where the
 * person continues once the new password is set; `lang`, the language of the page it was asked
 * from (English for an administrator's).
 */
export async function sendPasswordReset(deps: MailDeps, user: { id: number; username: string; email: string }, returnTo?: string, lang: Language = 'en'): Promise<void> {
  const link = await issueLink(deps.db, deps.config.issuer, 'reset-password', user, returnTo);
  await deps.mailer.send({
    to: user.email,
    subject: translator(lang)('mail:resetPassword.subject'),
    template: 'reset-password',
    data: { link, username: user.username },
    lang,
  });
}

/** The account a reset link is for, while the link can still be used (LinkRefusedError otherwise). */
export async function resetTarget(db: Knex, token: unknown): Promise<UserRow> {
  const link = await usableLink(db, 'reset-password', token);
  const user = await findUserById(db, link.user_id);
  if (!user) throw new LinkRefusedError('reset-password', 'unknown');
  return user;
}

const newPasswordSchema = z
  .object({ username: z.string(), email: z.string(), password: rules.password })
  .refine(rules.passwordIsNotIdentity, { path: ['password'], message: 'password must not be your username or email' });

/**
 * Sets a new password through a reset link: the password rules, the two entries equal, the hash
 * in the bounded queue, then the link used (exactly once among any number of concurrent tries)
 * and the hash stored together. The account's other reset links and any new address waiting for
 * its link stop working, and every session of the account is signed out (whoever knew the old
 * password is signed out with it). A security notice goes to the address.
 *
 * An account whose address was never verified is cleared as well: whoever made it, or added to
 * it, never proved they read the address, and the person following this link just did. Every
 * passkey, authenticator app, recovery code, personal access token and authorized application
 * (with its tokens) goes, and the address counts as verified from now on.
 */
export async function resetPassword(
  deps: SessionDeps & MailDeps & { kdf: KdfQueue },
  input: { token: unknown; password: string; confirmation: string },
  from: SeenFrom,
): Promise<{ user: UserRow; passwordHash: string; cleared: boolean }> {
  const user = await resetTarget(deps.db, input.token);
  rules.parse(newPasswordSchema, { username: user.username, email: user.email, password: input.password });
  if (input.confirmation !== input.password) throw new ValidationError('password_confirmation', 'The two passwords do not match');
  const hash = await deps.kdf.hash(input.password);
  const cleared = await changing(deps.db, [`user:${user.id}`], () =>
    deps.db.transaction(async (trx) => {
      const at = now();
      const link = await useLink(trx, 'reset-password', input.token);
      await setPasswordHash(trx, user.id, hash, at);
      await retireLinks(trx, user.id, 'reset-password');
      await retireEmailChanges(trx, user.id, at);
      const row = await findUserById(trx, user.id);
      if (!row || row.email_verified_at) return false;
      const removed = await clearCredentials(trx, user.id);
      await markEmailVerified(trx, user.id, link.email, at);
      await recordAudit(trx, { groupId: null, actorId: user.id, action: 'user.recovery.clear', target: user.username, details: { ...removed }, ip: from.ip }, at);
      return true;
    }),
  );
  if (cleared) await revokeEveryApplication(deps, user.id);
  await signOutEverywhere(deps, user.id);
  sendSecurityNotice(deps, user, 'password-reset', from);
  return { user, passwordHash: hash, cleared };
}
