import { hash, randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { findAccountLink, insertAccountLink, retireAccountLinks, useAccountLink, type AccountLinkRow, type LinkPurpose } from '../db/account-links.js';
import { AppError } from '../errors.js';
import { now } from '../time.js';

export type { LinkPurpose };

/** How long a link sent by mail works. */
export const LINK_TTL_S: Record<MailedLink, number> = {
  'verify-email': 24 * 60 * 60,
  'reset-password': 60 * 60,
  signup: 24 * 60 * 60,
  'email-change': 24 * 60 * 60,
};

/** When a link made now for `purpose` stops working. */
export function linkExpiry(purpose: MailedLink, at: string): string {
  return new Date(Date.parse(at) + LINK_TTL_S[purpose] * 1000).toISOString();
}

/** The page each kind of link opens; the token rides in the query string, which is never logged. */
const LINK_PATH: Record<MailedLink, string> = {
  'verify-email': '/verify-email',
  'reset-password': '/reset-password',
  signup: '/signup/confirm',
  'email-change': '/change-email',
};

const TOKEN = /^[A-Za-z0-9_-]{43}$/;

export type LinkRefusal = 'unknown' | 'used' | 'expired' | 'exhausted';

/** What a mailed link is for: the two kept in account_links, finishing a sign-up, confirming a new address. */
export type MailedLink = LinkPurpose | 'signup' | 'email-change';

/** A link that cannot be used: unknown (400), or already used or expired (410). */
export class LinkRefusedError extends AppError {
  constructor(readonly purpose: MailedLink, readonly reason: LinkRefusal) {
    super(reason === 'unknown' ? 400 : 410, `link_${reason}`, REFUSALS[reason]);
  }
}

const REFUSALS: Record<LinkRefusal, string> = {
  unknown: 'This link is not valid. Check that the whole link was opened, or ask for a new one.',
  used: 'This link was already used. Each link works only once.',
  expired: 'This link has expired.',
  exhausted: 'Too many wrong passwords were given with this link, so it works no more.',
};

function digestOf(token: string): string {
  return hash('sha256', token, 'hex');
}

/** A new link token (32 random bytes, base64url) and the digest that is stored instead of it. */
export function newLinkToken(): { token: string; digest: string } {
  const token = randomBytes(32).toString('base64url');
  return { token, digest: digestOf(token) };
}

/** The stored digest of a link token, or undefined when the value cannot be one. */
export function linkDigest(token: unknown): string | undefined {
  return TOKEN.test(String(token)) ? digestOf(String(token)) : undefined;
}

/** The reason a stored link of any kind cannot be used at `at`, or undefined when it can. */
export function refusalOf(link: { used_at: unknown; expires_at: string | Date } | undefined, at: string): LinkRefusal | undefined {
  if (!link) return 'unknown';
  if (link.used_at) return 'used';
  if (new Date(link.expires_at).getTime() <= Date.parse(at)) return 'expired';
  return undefined;
}

/** Makes a link for `user`'s current address and returns its URL; only the token's digest is stored. */
export async function issueLink(db: Knex, issuer: string, purpose: LinkPurpose, user: { id: number; email: string }, returnTo?: string): Promise<string> {
  const { token, digest } = newLinkToken();
  const at = now();
  await insertAccountLink(db, { purpose, userId: user.id, email: user.email, digest, expiresAt: linkExpiry(purpose, at), at });
  return linkUrl(issuer, purpose, token, returnTo);
}

/** The URL a mailed link opens. Where the person was going (an authorization flow's start) rides along; the page checks it again. */
export function linkUrl(issuer: string, purpose: MailedLink, token: string, returnTo?: string): string {
  const back = returnTo ? `&return_to=${encodeURIComponent(returnTo)}` : '';
  return `${issuer}${LINK_PATH[purpose]}?token=${token}${back}`;
}

/** The link a token names, if it can still be used; it stays unused. Throws LinkRefusedError otherwise. */
export async function usableLink(db: Knex, purpose: LinkPurpose, token: unknown): Promise<AccountLinkRow> {
  const link = TOKEN.test(String(token)) ? await findAccountLink(db, purpose, digestOf(String(token))) : undefined;
  const refusal = refusalOf(link, now());
  if (refusal) throw new LinkRefusedError(purpose, refusal);
  return link!;
}

/** Uses the link a token names: exactly once, however many requests present it at the same time. */
export async function useLink(db: Knex, purpose: LinkPurpose, token: unknown): Promise<AccountLinkRow> {
  if (!TOKEN.test(String(token))) throw new LinkRefusedError(purpose, 'unknown');
  const digest = digestOf(String(token));
  const at = now();
  const used = await useAccountLink(db, purpose, digest, at);
  if (used) return used;
  throw new LinkRefusedError(purpose, refusalOf(await findAccountLink(db, purpose, digest), at) ?? 'used');
}

/** Every other unused link of this kind stops working (after a password reset, the older reset links). */
export function retireLinks(db: Knex, userId: number, purpose: LinkPurpose): Promise<void> {
  return retireAccountLinks(db, userId, purpose, now());
}

