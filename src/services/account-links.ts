import { hash, randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { findAccountLink, insertAccountLink, retireAccountLinks, useAccountLink, type AccountLinkRow, type LinkPurpose } from '../db/account-links.js';
import { AppError } from '../errors.js';
import { now } from '../time.js';

export type { LinkPurpose };

/** How long a link sent by mail works. */
export const LINK_TTL_S: Record<LinkPurpose, number> = {
  'verify-email': 24 * 60 * 60,
  'reset-password': 60 * 60,
};

/** The page each kind of link opens; the token rides in the query string, which is never logged. */
const LINK_PATH: Record<LinkPurpose, string> = {
  'verify-email': '/verify-email',
  'reset-password': '/reset-password',
};

const TOKEN = /^[A-Za-z0-9_-]{43}$/;

export type LinkRefusal = 'unknown' | 'used' | 'expired';

/** A link that cannot be used: unknown (400), or already used or expired (410). */
export class LinkRefusedError extends AppError {
  constructor(readonly purpose: LinkPurpose, readonly reason: LinkRefusal) {
    super(reason === 'unknown' ? 400 : 410, `link_${reason}`, REFUSALS[reason]);
  }
}

const REFUSALS: Record<LinkRefusal, string> = {
  unknown: 'This link is not valid. Check that the whole link was opened, or ask for a new one.',
  used: 'This link was already used. Each link works only once.',
  expired: 'This link has expired.',
};

function digestOf(token: string): string {
  return hash('sha256', token, 'hex');
}

/** Makes a link for `user`'s current address and returns its URL; only the token's digest is stored. */
export async function issueLink(db: Knex, issuer: string, purpose: LinkPurpose, user: { id: number; email: string }, returnTo?: string): Promise<string> {
  const token = randomBytes(32).toString('base64url');
  const at = now();
  const expiresAt = new Date(Date.parse(at) + LINK_TTL_S[purpose] * 1000).toISOString();
  await insertAccountLink(db, { purpose, userId: user.id, email: user.email, digest: digestOf(token), expiresAt, at });
  // Where the person was going (an authorization flow's start) rides along; the page checks it again.
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

function refusalOf(link: AccountLinkRow | undefined, at: string): LinkRefusal | undefined {
  if (!link) return 'unknown';
  if (link.used_at) return 'used';
  if (new Date(link.expires_at).getTime() <= Date.parse(at)) return 'expired';
  return undefined;
}
