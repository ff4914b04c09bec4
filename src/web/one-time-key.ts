import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Context } from 'koa';
import { AppError } from '../errors.js';
import type { Knex } from 'knex';
import { RepeatedSubmission, submittedRecord, type SubmissionKey, type SubmissionKind } from '../services/submissions.js';
import { requireUser } from './context.js';

/**
 * The one-time key a creating form carries in its hidden `_once` field: 16 random bytes, and an
 * HMAC of them under this session's CSRF token, so a key works only in the session whose page
 * issued it. The page that shows the form issues a new key; a form shown again with its errors
 * keeps its key (nothing was created yet, so the corrected form still creates once).
 */
const FIELD = '_once';
const KEY = /^([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{22})$/;

function binding(ctx: Context, random: string): string {
  return createHmac('sha256', String(ctx.state.csrfToken ?? '')).update(`once\0${random}`).digest('base64url').slice(0, 22);
}

/**
 * Runs a creating service with the form's key: what it created, or, when the key was claimed
 * already (a repeated submission), the id of the record its first copy created (undefined when
 * that is not this user's, or gone).
 */
export async function createOnce<T>(db: Knex, create: () => Promise<T>): Promise<{ created: T } | { repeated: string | undefined }> {
  try {
    return { created: await create() };
  } catch (err) {
    if (!(err instanceof RepeatedSubmission)) throw err;
    return { repeated: await submittedRecord(db, err.submission) };
  }
}

/**
 * A page with a creating form and nothing secret on it may be kept by the browser (never shared
 * caches), revalidated on every visit: Back then shows the very form that was sent, with its key,
 * so sending it again is recognised as a repeat instead of creating anew.
 */
export function keepFormForBack(ctx: Context): void {
  ctx.set('Cache-Control', 'private, no-cache');
}

export function issueOnceKey(ctx: Context): string {
  const random = randomBytes(16).toString('base64url');
  return `${random}.${binding(ctx, random)}`;
}

/** The key the form sent, to show again with the form's errors ('' when none came). */
export function sentOnceKey(ctx: Context): string {
  const sent = ((ctx.request as { body?: Record<string, unknown> }).body ?? {})[FIELD];
  return typeof sent === 'string' ? sent : '';
}

/**
 * The submission's key for the services, or undefined when the form sent none (a form of an
 * earlier page, or a script posting its own fields: it then creates as before). A key that was
 * not issued to this session is refused: the form is another session's.
 */
export function submissionOf(ctx: Context, kind: SubmissionKind): SubmissionKey | undefined {
  const sent = sentOnceKey(ctx);
  if (!sent) return undefined;
  const parts = KEY.exec(sent);
  const expected = parts ? Buffer.from(binding(ctx, parts[1]!)) : undefined;
  if (!parts || !expected || !timingSafeEqual(Buffer.from(parts[2]!), expected)) {
    throw new AppError(400, 'invalid_request', 'This form has expired or was opened in another session. Go back, reload the page and try again.');
  }
  return { key: parts[1]!, userId: requireUser(ctx).id, kind };
}
