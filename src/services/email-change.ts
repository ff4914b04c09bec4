import type { Knex } from 'knex';
import { emailTakenByOther } from '../db/account.js';
import { retireAccountLinks } from '../db/account-links.js';
import { findEmailChange, insertEmailChange, openEmailChange, pruneEmailChanges, useEmailChange, type EmailChangeRow } from '../db/email-changes.js';
import { isUniqueViolation } from '../db/knex.js';
import { findUserByLogin, replaceEmail, type UserRow } from '../db/users.js';
import { AppError, RetryLaterError } from '../errors.js';
import { translator } from '../i18n.js';
import { now } from '../time.js';
import { linkDigest, linkExpiry, LinkRefusedError, linkUrl, newLinkToken, refusalOf } from './account-links.js';
import { addressInUseMail } from './address-mail.js';
import { changing } from './change-versions.js';
import type { Limits } from './limits.js';
import { sendSecurityNotice } from './security-notices.js';
import type { SeenFrom } from './sessions.js';
import { takeAddressMail } from './sign-up.js';
import type { MailDeps } from './verification.js';

/**
 * A new e-mail address for an account (Account settings → Profile). The account keeps its
 * current address until the new one is proven: a link goes to the new address, and only
 * following it, signed in as the account, changes the address (verified, since the link proved
 * it). When the new address belongs to another account, that account's owner is told instead
 * and no link exists; the person asking sees exactly what they would see for a free address, so
 * the form cannot be used to find out which addresses have accounts. When the change is made, a
 * security notice goes to the old address.
 */
export type EmailChangeDeps = MailDeps & { limits: Limits };

/**
 * Takes the mails a change will send from the account's limit and the new address's, before
 * anything is written: a 429 on the e-mail field past either, the same whether or not the address
 * has an account.
 */
export async function takeEmailChangeMail(deps: { limits: Limits }, userId: number, email: string): Promise<void> {
  try {
    await deps.limits.takeVerificationMail(userId);
  } catch (err) {
    if (err instanceof RetryLaterError) throw new RetryLaterError(429, err.code, err.message, err.retryAfterS, 'email');
    throw err;
  }
  await takeAddressMail(deps, email);
}

/**
 * Records the change asked for (earlier open ones stop working) and mails, in the background, the
 * link to the new address, or word to the account that has it. Whether it has one is looked up
 * only in the background, so neither the answer nor its timing tells.
 */
export async function startEmailChange(deps: EmailChangeDeps, user: Pick<UserRow, 'id' | 'username'>, email: string, from: SeenFrom): Promise<void> {
  const { token, digest } = newLinkToken();
  const at = now();
  await deps.db.transaction((trx) => insertEmailChange(trx, { userId: user.id, email, digest, expiresAt: linkExpiry('email-change', at), at }));
  deliverEmailChange(deps, user, email, token, from).catch((err: unknown) => deps.log.error({ err, userId: user.id }, 'e-mail change mail not sent'));
}

async function deliverEmailChange(deps: EmailChangeDeps, user: Pick<UserRow, 'id' | 'username'>, email: string, token: string, from: SeenFrom): Promise<void> {
  const holder = await findUserByLogin(deps.db, email);
  if (holder && holder.id !== user.id) {
    if (!(await deps.limits.accountMailAllowed(holder.id))) return;
    await deps.mailer.send(addressInUseMail(deps.config.issuer, holder, 'email-change', from));
    return;
  }
  const lang = from.lang ?? 'en';
  await deps.mailer.send({
    to: email,
    subject: translator(lang)('mail:emailChange.subject'),
    template: 'confirm-email-change',
    data: { link: linkUrl(deps.config.issuer, 'email-change', token), username: user.username, email, site: new URL(deps.config.issuer).host },
    lang,
  });
}

/** The account's change waiting for its link (the address it asked for, and until when), if any. */
export async function pendingEmailChange(db: Knex, userId: number): Promise<{ email: string; expiresAt: string } | undefined> {
  const row = await openEmailChange(db, userId, now());
  return row && { email: row.email, expiresAt: new Date(row.expires_at).toISOString() };
}

/** The change a link names, while it can still be made (LinkRefusedError otherwise). */
export async function emailChangeOf(db: Knex, token: unknown): Promise<EmailChangeRow> {
  const digest = linkDigest(token);
  const change = digest ? await findEmailChange(db, digest) : undefined;
  const refusal = refusalOf(change, now());
  if (refusal) throw new LinkRefusedError('email-change', refusal);
  return change!;
}

/** A change link followed while signed in as another account (403); it stays usable. */
export class OtherAccountsLinkError extends AppError {
  constructor() {
    super(403, 'other_account', 'This link was sent for another account. Sign out, sign in to the account that asked for the new address, and open the link again.');
  }
}

/** The new address belongs to another account by now (409); the link is spent and nothing changed. */
export class NewAddressTakenError extends AppError {
  constructor(email: string) {
    super(409, 'address_taken', `Another account uses ${email} by now, so your address did not change. Ask for another address on the Profile page.`);
  }
}

/**
 * Makes the change a link names, for the account signed in (the one that asked): the address
 * becomes the new one, verified; the account's open reset and verification links (sent to the
 * old address) stop working; a security notice goes to the old address. Exactly once, however
 * many requests present the link at once.
 */
export async function confirmEmailChange(deps: MailDeps, user: UserRow, token: unknown, from: SeenFrom): Promise<{ email: string }> {
  const change = await emailChangeOf(deps.db, token);
  if (Number(change.user_id) !== user.id) throw new OtherAccountsLinkError();
  const at = now();
  if (await emailTakenByOther(deps.db, user.id, change.email)) {
    await useEmailChange(deps.db, change.id, at);
    throw new NewAddressTakenError(change.email);
  }
  try {
    await changing(deps.db, [`user:${user.id}`], () =>
      deps.db.transaction(async (trx) => {
        if (!(await useEmailChange(trx, change.id, at))) throw new LinkRefusedError('email-change', refusalOf(await findEmailChange(trx, linkDigest(token)!), at) ?? 'used');
        await replaceEmail(trx, user.id, change.email, at);
        await retireAccountLinks(trx, user.id, 'reset-password', at);
        await retireAccountLinks(trx, user.id, 'verify-email', at);
      }),
    );
  } catch (err) {
    // Another account took the address in the same moment: the unique index decides.
    if (isUniqueViolation(err)) throw new NewAddressTakenError(change.email);
    throw err;
  }
  sendSecurityNotice(deps, user, 'email-changed', from, { detail: change.email, to: user.email });
  return { email: change.email };
}

/** Forgets address changes a week after their link expired (until then the link still says "expired" or "used"). */
export function pruneExpiredEmailChanges(db: Knex): Promise<number> {
  return pruneEmailChanges(db, new Date(Date.now() - 7 * 24 * 60 * 60_000).toISOString());
}
