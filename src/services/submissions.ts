import type { Knex } from 'knex';
import { findSubmissionKey, insertSubmissionKey, pruneSubmissionKeys, setSubmissionRecord } from '../db/submission-keys.js';
import { isUniqueViolation } from '../db/knex.js';
import { now } from '../time.js';

/**
 * One-time keys of the creating forms: a submission creates its record once, whatever number of
 * copies of it arrive (a reload, a double click, Back and resubmit, copies sent at once). The
 * creating service claims the key in its transaction before it writes anything and records the
 * new record's id with it; a copy finds the key claimed (the unique index decides, also between
 * instances), writes nothing, and its caller shows the record the first copy made.
 */
export type SubmissionKind = 'group' | 'app' | 'secret' | 'token' | 'member' | 'webhook' | 'resource';

export interface SubmissionKey {
  key: string;
  userId: number;
  kind: SubmissionKind;
}

/** How long a key is remembered: longer than any form stays open. */
const KEEP_DAYS = 7;

/** The submission's key was claimed already: nothing was written this time. */
export class RepeatedSubmission extends Error {
  constructor(readonly submission: SubmissionKey) {
    super('this form was submitted already');
  }
}

/** In the creating transaction, before anything is written: claims the key, or throws RepeatedSubmission. */
export async function claimSubmission(trx: Knex, submission: SubmissionKey | undefined): Promise<void> {
  if (!submission) return;
  try {
    await insertSubmissionKey(trx, { ...submission, at: now() });
  } catch (err) {
    if (isUniqueViolation(err)) throw new RepeatedSubmission(submission);
    throw err;
  }
}

/** In the same transaction, once the record exists: what the key created. */
export async function completeSubmission(trx: Knex, submission: SubmissionKey | undefined, recordId: string | number): Promise<void> {
  if (submission) await setSubmissionRecord(trx, submission.key, String(recordId));
}

/**
 * The id of the record a repeated submission's first copy created, or undefined when the key is
 * another user's or names another kind of record (a key copied into another form).
 */
export async function submittedRecord(db: Knex, submission: SubmissionKey): Promise<string | undefined> {
  const row = await findSubmissionKey(db, submission.key);
  if (!row || Number(row.user_id) !== Number(submission.userId) || row.kind !== submission.kind) return undefined;
  return row.record_id ?? undefined;
}

export function pruneOldSubmissions(db: Knex): Promise<void> {
  return pruneSubmissionKeys(db, new Date(Date.now() - KEEP_DAYS * 86_400_000).toISOString());
}
