import type { Knex } from 'knex';
import { markEmailVerified } from '../db/users.js';
import { UnavailableError } from '../errors.js';
import { type Language, translator } from '../i18n.js';
import type { Logger } from '../log.js';
import { now } from '../time.js';
import { changed } from './change-versions.js';
import { issueLink, useLink } from './account-links.js';
import type { Limits } from './limits.js';
import type { Mailer } from './mail.js';

/** What sending an account's mail needs: the database, the mailer, and the issuer every link starts with. */
export interface MailDeps {
  db: Knex;
  config: { issuer: string };
  mailer: Mailer;
  log: Logger;
}

interface Recipient {
  id: number;
  username: string;
  email: string;
}

/**
 * Mails a link (24 h, single use) that proves the account's current address: for an account an
 * operator made with `idp user create --unverified`. A mail server that refuses throws.
 */
export async function sendVerification(deps: MailDeps, user: Recipient, returnTo?: string): Promise<void> {
  await mailVerificationLink(deps, user, returnTo);
}

/**
 * Another link for an unverified address (the banner's Resend), within the account's limit and
 * the address's. An address already verified gets nothing. A mail server that refuses is a 503
 * the person sees.
 */
export async function resendVerification(deps: MailDeps & { limits: Limits }, user: Recipient & { email_verified_at: unknown }, returnTo?: string, lang?: Language): Promise<void> {
  if (user.email_verified_at) return;
  await deps.limits.takeVerificationMail(user.id);
  await deps.limits.takeAddressMail(user.email);
  try {
    await mailVerificationLink(deps, user, returnTo, lang);
  } catch (err) {
    deps.log.error({ err, userId: user.id }, 'verification mail not sent');
    throw new UnavailableError('The e-mail could not be sent right now. Try again in a few minutes.');
  }
}

/** `lang`: the language of the page it was asked from; English when none asked (a new account, the CLI). */
async function mailVerificationLink(deps: MailDeps, user: Recipient, returnTo?: string, lang: Language = 'en'): Promise<void> {
  const link = await issueLink(deps.db, deps.config.issuer, 'verify-email', user, returnTo);
  await deps.mailer.send({
    to: user.email,
    subject: translator(lang)('mail:verifyEmail.subject'),
    template: 'verify-email',
    data: { link, username: user.username, email: user.email },
    lang,
  });
}

/**
 * Follows a verification link (once). The account is verified only if its address is still the
 * one the link was sent to; `verified` says whether it was.
 */
export async function verifyEmail(db: Knex, token: unknown): Promise<{ verified: boolean }> {
  const { userId, verified } = await db.transaction(async (trx) => {
    const link = await useLink(trx, 'verify-email', token);
    return { userId: Number(link.user_id), verified: await markEmailVerified(trx, link.user_id, link.email, now()) };
  });
  if (verified) await changed(db, [`user:${userId}`]);
  return { verified };
}
