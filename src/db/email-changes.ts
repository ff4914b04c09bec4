import type { Knex } from 'knex';

export interface EmailChangeRow {
  id: number;
  user_id: number;
  email: string;
  expires_at: string | Date;
  used_at: string | Date | null;
  created_at: string | Date;
}

const COLUMNS = ['id', 'user_id', 'email', 'expires_at', 'used_at', 'created_at'];

/** A new address asked for; the account's earlier requests that are still open stop working. */
export async function insertEmailChange(db: Knex, change: { userId: number; email: string; digest: string; expiresAt: string; at: string }): Promise<void> {
  await db('email_changes').where({ user_id: change.userId }).whereNull('used_at').update({ used_at: change.at });
  await db('email_changes').insert({
    user_id: change.userId,
    email: change.email,
    digest: change.digest,
    expires_at: change.expiresAt,
    created_at: change.at,
  });
}

export function findEmailChange(db: Knex, digest: string): Promise<EmailChangeRow | undefined> {
  return db('email_changes').where({ digest }).first(COLUMNS);
}

/** The account's open request (unused, unexpired), if it has one. */
export function openEmailChange(db: Knex, userId: number, at: string): Promise<EmailChangeRow | undefined> {
  return db('email_changes').where({ user_id: userId }).whereNull('used_at').where('expires_at', '>', at).orderBy('id', 'desc').first(COLUMNS);
}

/** Uses the request once, however many requests present its link at the same time. */
export async function useEmailChange(db: Knex, id: number, at: string): Promise<boolean> {
  return (await db('email_changes').where({ id }).whereNull('used_at').where('expires_at', '>', at).update({ used_at: at })) === 1;
}

/** Every open request of the account stops working (the address changed, or the password was reset). */
export async function retireEmailChanges(db: Knex, userId: number, at: string): Promise<void> {
  await db('email_changes').where({ user_id: userId }).whereNull('used_at').update({ used_at: at });
}

export function pruneEmailChanges(db: Knex, before: string): Promise<number> {
  return db('email_changes').where('expires_at', '<', before).delete();
}
