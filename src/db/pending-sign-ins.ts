import type { Knex } from 'knex';

export const PENDING_SIGN_INS_TABLE = 'pending_sign_ins';

export interface PendingSignInRow {
  user_id: number;
  place: string;
  tries: number;
}

export async function insertPendingSignIn(db: Knex, row: { digest: string; userId: number; place: string; expiresAt: number }): Promise<void> {
  await db(PENDING_SIGN_INS_TABLE).insert({ digest: row.digest, user_id: row.userId, place: row.place, tries: 0, expires_at: row.expiresAt });
}

/** The sign-in waiting at `place`, while it has not expired, whatever its tries. */
export async function findPendingSignIn(db: Knex, digest: string, place: string | undefined): Promise<PendingSignInRow | undefined> {
  const query = db(PENDING_SIGN_INS_TABLE).where({ digest }).andWhere('expires_at', '>', Date.now());
  if (place !== undefined) query.andWhere({ place });
  const row = (await query.first('user_id', 'place', 'tries')) as PendingSignInRow | undefined;
  return row && { user_id: Number(row.user_id), place: row.place, tries: Number(row.tries) };
}

/**
 * One more try of the sign-in waiting at `place`, counted by one conditional update, so that of
 * any number sent at once at most `max` are counted; undefined when it is gone, expired, or has
 * had its `max` tries.
 */
export async function countPendingSignInTry(db: Knex, digest: string, place: string, max: number): Promise<PendingSignInRow | undefined> {
  const [row] = (await db(PENDING_SIGN_INS_TABLE)
    .where({ digest, place })
    .andWhere('expires_at', '>', Date.now())
    .andWhere('tries', '<', max)
    .increment('tries', 1)
    .returning(['user_id', 'place', 'tries'])) as PendingSignInRow[];
  return row && { user_id: Number(row.user_id), place: row.place, tries: Number(row.tries) };
}

/** A try that was never checked (the sign-in limits refused it) is not counted. */
export async function uncountPendingSignInTry(db: Knex, digest: string): Promise<void> {
  await db(PENDING_SIGN_INS_TABLE).where({ digest }).andWhere('tries', '>', 0).decrement('tries', 1);
}

export async function deletePendingSignIn(db: Knex, digest: string): Promise<void> {
  await db(PENDING_SIGN_INS_TABLE).where({ digest }).del();
}

/** Deletes the sign-ins that can no longer go on; returns how many. */
export function prunePendingSignIns(db: Knex): Promise<number> {
  return db(PENDING_SIGN_INS_TABLE).where('expires_at', '<=', Date.now()).del();
}
