import type { Knex } from 'knex';

export interface PendingSignUpRow {
  id: number;
  username: string;
  email: string;
  name: string;
  password_hash: string;
  attempts: number;
  expires_at: string | Date;
  used_at: string | Date | null;
}

const COLUMNS = ['id', 'username', 'email', 'name', 'password_hash', 'attempts', 'expires_at', 'used_at'];

export async function insertPendingSignUp(
  db: Knex,
  signUp: { username: string; email: string; name: string; passwordHash: string; digest: string; expiresAt: string; at: string },
): Promise<number> {
  const [row] = await db('pending_signups')
    .insert({
      username: signUp.username,
      email: signUp.email,
      name: signUp.name,
      password_hash: signUp.passwordHash,
      digest: signUp.digest,
      expires_at: signUp.expiresAt,
      created_at: signUp.at,
    })
    .returning('id');
  return Number(typeof row === 'object' ? (row as { id: number }).id : row);
}

export function findPendingSignUp(db: Knex, digest: string): Promise<PendingSignUpRow | undefined> {
  return db('pending_signups').where({ digest }).first(COLUMNS);
}

/**
 * Marks the sign-up completed if it is still unused and unexpired, in one conditional update: of
 * any number of requests presenting the same link at once, exactly one gets `true`.
 */
export async function usePendingSignUp(db: Knex, id: number, at: string): Promise<boolean> {
  return (await db('pending_signups').where({ id }).whereNull('used_at').where('expires_at', '>', at).update({ used_at: at })) === 1;
}

/**
 * Takes one of the link's password attempts before the password is checked, in one conditional
 * update: however many requests arrive at once, no more than `max` are ever checked. False when
 * none is left (or the link was used).
 */
export async function takeSignUpAttempt(db: Knex, id: number, max: number): Promise<boolean> {
  return (await db('pending_signups').where({ id }).whereNull('used_at').where('attempts', '<', max).increment('attempts', 1)) === 1;
}

/** The link works no more (its last password attempt was wrong, or its address has an account). */
export async function spendPendingSignUp(db: Knex, id: number, at: string): Promise<void> {
  await db('pending_signups').where({ id }).whereNull('used_at').update({ used_at: at });
}

/** A sign-up that can never complete (its address has an account: no link was mailed). */
export async function deletePendingSignUp(db: Knex, id: number): Promise<void> {
  await db('pending_signups').where({ id }).delete();
}

/** Forgets sign-ups whose link expired or was used before `before`. */
export function prunePendingSignUps(db: Knex, before: string): Promise<number> {
  return db('pending_signups').where('expires_at', '<', before).delete();
}
