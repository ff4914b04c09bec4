import type { Knex } from 'knex';

/** One signed-in browser session of a user, by its uid (see migration 0006_sessions). */
export interface SessionIndexRow {
  uid: string;
  user_id: number;
  ip: string | null;
  user_agent: string;
  created_at: string | Date;
  last_seen_at: string | Date;
  expires_at: string | Date;
  /** The last proof of the person given in this session since it signed in (see migration 0018_reauthentication). */
  confirmed_at: string | Date | null;
}

const TABLE = 'user_sessions';

/**
 * Records a session seen now: a new row, or the same row with where and when it was last seen.
 * The user follows the session too, should the same uid ever sign in as someone else.
 */
export async function upsertSessionIndex(
  db: Knex,
  seen: { uid: string; userId: number; ip: string | null; userAgent: string; at: string; expiresAt: string },
): Promise<void> {
  const changing = { user_id: seen.userId, ip: seen.ip, user_agent: seen.userAgent, last_seen_at: seen.at, expires_at: seen.expiresAt };
  await db(TABLE)
    .insert({ uid: seen.uid, created_at: seen.at, ...changing })
    .onConflict('uid')
    .merge(changing);
}

/**
 * Records a session seen now whose person has just proved who they are (a password, a second
 * factor or a passkey given again): the row as upsertSessionIndex writes it, with `confirmed_at`.
 */
export async function confirmSessionIndex(
  db: Knex,
  seen: { uid: string; userId: number; ip: string | null; userAgent: string; at: string; expiresAt: string },
): Promise<void> {
  const changing = { user_id: seen.userId, ip: seen.ip, user_agent: seen.userAgent, last_seen_at: seen.at, expires_at: seen.expiresAt, confirmed_at: seen.at };
  await db(TABLE)
    .insert({ uid: seen.uid, created_at: seen.at, ...changing })
    .onConflict('uid')
    .merge(changing);
}

/** When the user's session `uid` was last confirmed (null: never; undefined: no such row). */
export async function sessionConfirmedAt(db: Knex, userId: number, uid: string): Promise<string | Date | null | undefined> {
  const row = await db(TABLE).where({ user_id: userId, uid }).first('confirmed_at');
  return row ? (row.confirmed_at as string | Date | null) : undefined;
}

/** A user's sessions, the most recently seen first. */
export function listSessionIndex(db: Knex, userId: number): Promise<SessionIndexRow[]> {
  return db(TABLE).where({ user_id: userId }).orderBy([{ column: 'last_seen_at', order: 'desc' }, { column: 'uid' }]).select();
}

export function findSessionIndex(db: Knex, userId: number, uid: string): Promise<SessionIndexRow | undefined> {
  return db(TABLE).where({ user_id: userId, uid }).first();
}

export async function deleteSessionIndex(db: Knex, uids: string[]): Promise<void> {
  if (uids.length) await db(TABLE).whereIn('uid', uids).del();
}

/** Deletes the rows of sessions that expired before `at`; returns how many. */
export function pruneSessionIndex(db: Knex, at: string): Promise<number> {
  return db(TABLE).where('expires_at', '<', at).del();
}
