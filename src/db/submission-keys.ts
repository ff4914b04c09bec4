import type { Knex } from 'knex';

export interface SubmissionKeyRow {
  key: string;
  user_id: number;
  kind: string;
  record_id: string | null;
}

/** Claims a key; a unique violation when a copy of the submission claimed it first. */
export async function insertSubmissionKey(trx: Knex, row: { key: string; userId: number; kind: string; at: string }): Promise<void> {
  await trx('submission_keys').insert({ key: row.key, user_id: row.userId, kind: row.kind, record_id: null, created_at: row.at });
}

export async function setSubmissionRecord(trx: Knex, key: string, recordId: string): Promise<void> {
  await trx('submission_keys').where({ key }).update({ record_id: recordId });
}

export function findSubmissionKey(db: Knex, key: string): Promise<SubmissionKeyRow | undefined> {
  return db('submission_keys').where({ key }).first('key', 'user_id', 'kind', 'record_id');
}

/** Keys older than `before`: a form is not resubmitted days later (and then creates anew). */
export async function pruneSubmissionKeys(db: Knex, before: string): Promise<void> {
  await db('submission_keys').where('created_at', '<', before).delete();
}
