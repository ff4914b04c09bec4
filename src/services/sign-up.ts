import type { Knex } from 'knex';
import { z } from 'zod';
import { isUniqueViolation } from '../db/knex.js';
import { findPendingSignUp, insertPendingSignUp, prunePendingSignUps, spendPendingSignUp, takeSignUpAttempt, usePendingSignUp, type PendingSignUpRow } from '../db/pending-signups.js';
import { findUserByLogin, findUserByUsername, insertUser, type UserRow } from '../db/users.js';
import { AppError, ConflictError, RetryLaterError, ValidationError } from '../errors.js';
import { translator } from '../i18n.js';
import { now } from '../time.js';
import { linkDigest, linkExpiry, LinkRefusedError, linkUrl, newLinkToken, refusalOf } from './account-links.js';
import { addressInUseMail } from './address-mail.js';
import type { SeenFrom } from './sessions.js';
import * as rules from './rules.js';
import { newUserSchema, type NewUser, type SignInDeps } from './users.js';
import type { MailDeps } from './verification.js';

/**
 * Sign-up from the site, which never tells whether an address already has an account.
 *
 * A sign-up makes no account. It is kept as a pending sign-up (the password as its Argon2id hash,
 * the link as its digest) and a link goes to the address; the account is made when that link is
 * followed and the password given again. So the answer to a sign-up is the same for every
 * address, and so is every later sign-in with what was typed: until the link is followed no
 * account exists to sign in to, whether or not the address had one. When the address already
 * has an account, its owner is mailed instead ("someone tried to create an account with your
 * address") and the pending sign-up is dropped: no link exists that could finish it.
 *
 * Usernames are public (as on GitHub): a username an account has is refused on the form. A
 * pending sign-up does not hold its username; if an account took it meanwhile, the link's page
 * asks for another.
 */
export type SignUpDeps = SignInDeps & MailDeps;

/** Wrong passwords a sign-up link takes before it stops working. */
export const SIGNUP_PASSWORD_ATTEMPTS = 5;

/**
 * A sign-up from the form: counted against the client address's sign-up limit first (every
 * sign-up counts, refused ones too), then the fields, the username, the address's mail limit,
 * the password's hash; then the pending sign-up is stored and the mail goes out in the
 * background. The answer and its timing do not depend on whether the address has an account:
 * that is looked up only in the background.
 */
export async function requestSignUp(deps: SignUpDeps, input: NewUser, context: { from: SeenFrom & { ip: string }; returnTo?: string }): Promise<{ email: string }> {
  await deps.limits.takeSignUp(context.from.ip);
  const data = rules.parse(newUserSchema, input);
  if (await findUserByUsername(deps.db, data.username)) throw new ConflictError('username', `username "${data.username}" is already taken`);
  await takeAddressMail(deps, data.email);
  const passwordHash = await deps.kdf.hash(data.password);
  const { token, digest } = newLinkToken();
  const at = now();
  const id = await insertPendingSignUp(deps.db, { username: data.username, email: data.email, name: data.name, passwordHash, digest, expiresAt: linkExpiry('signup', at), at });
  deliverSignUp(deps, { id, username: data.username, email: data.email }, token, context).catch((err: unknown) =>
    deps.log.error({ err, pendingSignUp: id }, 'sign-up mail not sent'),
  );
  return { email: data.email };
}

/** The address's mail limit, shown next to the form's e-mail field. */
export async function takeAddressMail(deps: { limits: SignInDeps['limits'] }, email: string): Promise<void> {
  try {
    await deps.limits.takeAddressMail(email);
  } catch (err) {
    if (err instanceof RetryLaterError) throw new RetryLaterError(429, err.code, err.message, err.retryAfterS, 'email');
    throw err;
  }
}

/** The link to finish the sign-up, or, when the address has an account, word to its owner; in the sign-up page's language. */
async function deliverSignUp(deps: SignUpDeps, pending: { id: number; username: string; email: string }, token: string, context: { from: SeenFrom; returnTo?: string }): Promise<void> {
  const owner = await findUserByLogin(deps.db, pending.email);
  if (owner) {
    await spendPendingSignUp(deps.db, pending.id, now());
    if (!(await deps.limits.accountMailAllowed(owner.id))) return;
    await deps.mailer.send(addressInUseMail(deps.config.issuer, owner, 'signup', context.from));
    return;
  }
  const lang = context.from.lang ?? 'en';
  await deps.mailer.send({
    to: pending.email,
    subject: translator(lang)('mail:confirmSignup.subject'),
    template: 'confirm-signup',
    data: { link: linkUrl(deps.config.issuer, 'signup', token, context.returnTo), username: pending.username, site: new URL(deps.config.issuer).host },
    lang,
  });
}

/** The pending sign-up a link names, while it can still be finished (LinkRefusedError otherwise). */
export async function pendingSignUp(db: Knex, token: unknown): Promise<PendingSignUpRow> {
  const digest = linkDigest(token);
  const pending = digest ? await findPendingSignUp(db, digest) : undefined;
  const refusal = pending && pending.attempts >= SIGNUP_PASSWORD_ATTEMPTS ? 'exhausted' : refusalOf(pending, now());
  if (refusal) throw new LinkRefusedError('signup', refusal);
  return pending!;
}

/** The link's address has an account by now (made since the sign-up): nothing is made. */
export class AddressTakenError extends AppError {
  constructor(readonly email: string) {
    super(409, 'address_taken', `An account already uses ${email}. Sign in to it, or choose a new password with Forgot password?.`);
  }
}

const finishSchema = z
  .object({ username: rules.username, email: z.string(), password: z.string() })
  .refine(rules.passwordIsNotIdentity, { path: ['username'], message: 'username must not be your password' });

/**
 * Finishes a sign-up from its mailed link: the password typed at sign-up, checked against its
 * hash (each link takes a few wrong ones, counted before they are checked), then the account is
 * made with the address verified (the link proved it), exactly once however many requests
 * present the link at the same time. A username taken meanwhile is a ConflictError on
 * `username` (the link stays usable, to choose another); an address that has an account by now
 * spends the link (AddressTakenError).
 */
export async function completeSignUp(deps: SignInDeps, input: { token: unknown; username: string; password: string }): Promise<UserRow> {
  const pending = await pendingSignUp(deps.db, input.token);
  const { username } = rules.parse(finishSchema, { username: input.username, email: pending.email, password: input.password });
  if (!input.password) throw new ValidationError('password', 'Enter the password you chose when you signed up.');
  if (!(await takeSignUpAttempt(deps.db, pending.id, SIGNUP_PASSWORD_ATTEMPTS))) throw new LinkRefusedError('signup', 'exhausted');
  const right = input.password.length <= 1024 && (await deps.kdf.verify(input.password, pending.password_hash));
  if (!right) throw new ValidationError('password', 'That is not the password you chose when you signed up.');
  if (await findUserByLogin(deps.db, pending.email)) {
    await spendPendingSignUp(deps.db, pending.id, now());
    throw new AddressTakenError(pending.email);
  }
  try {
    return await deps.db.transaction(async (trx) => {
      const at = now();
      if (await findUserByUsername(trx, username)) throw usernameTaken(username);
      if (!(await usePendingSignUp(trx, pending.id, at))) throw new LinkRefusedError('signup', refusalOf(await findPendingSignUp(trx, linkDigest(input.token)!), at) ?? 'used');
      return insertUser(trx, { username, email: pending.email, name: pending.name, passwordHash: pending.password_hash, at, emailVerified: true });
    });
  } catch (err) {
    // Another account took the username or the address in the same moment: the unique index decides.
    if (!isUniqueViolation(err)) throw err;
    if (await findUserByUsername(deps.db, username)) throw usernameTaken(username);
    throw new AddressTakenError(pending.email);
  }
}

function usernameTaken(username: string): ConflictError {
  return new ConflictError('username', `username "${username}" was taken meanwhile; choose another`);
}

/** How long a spent or expired sign-up is kept, so that its link still says "expired" or "used" rather than "not valid". */
const KEPT_AFTER_EXPIRY_MS = 7 * 24 * 60 * 60_000;

/** Forgets sign-ups (and their password hashes) a week after their link expired. */
export function pruneExpiredSignUps(db: Knex): Promise<number> {
  return prunePendingSignUps(db, new Date(Date.now() - KEPT_AFTER_EXPIRY_MS).toISOString());
}
