import type { Knex } from 'knex';

/** A group the user is the only owner of. */
export interface OwnedGroup {
  id: number;
  name: string;
  path: string;
}

/**
 * A new name, and the account's address as it is written (only its letter case may change here:
 * a new address is set by replaceEmail once proven). False when the account is gone.
 */
export async function updateUserProfile(db: Knex, id: number, profile: { name: string; email: string; at: string }): Promise<boolean> {
  const changes = { name: profile.name, email: profile.email, email_key: profile.email.toLowerCase(), updated_at: profile.at };
  return (await db('users').where({ id }).update(changes)) === 1;
}

/** Whether another account has this e-mail address (in any letter case). */
export async function emailTakenByOther(db: Knex, id: number, email: string): Promise<boolean> {
  return Boolean(await db('users').where({ email_key: email.toLowerCase() }).whereNot({ id }).first('id'));
}

/** The groups that have this user as their one owner, by name. */
export function groupsOwnedOnlyBy(db: Knex, userId: number): Promise<OwnedGroup[]> {
  return db('groups as g')
    .join('memberships as m', 'm.group_id', 'g.id')
    .where({ 'm.user_id': userId, 'm.role': 'owner' })
    .whereNotExists((q) => {
      q.select(db.raw('1')).from('memberships as o').whereRaw('o.group_id = g.id').where('o.role', 'owner').whereNot('o.user_id', userId);
    })
    .select('g.id', 'g.name', 'g.path')
    .orderBy('g.name');
}

/** Every group the user is a member of, with their role in it. */
export function membershipsOf(db: Knex, userId: number): Promise<Array<{ group_id: number; role: string }>> {
  return db('memberships').where({ user_id: userId }).select('group_id', 'role').orderBy('group_id');
}

/** Locks the rows of the groups this user owns until the transaction ends (owner changes wait). */
export async function lockOwnedGroups(trx: Knex.Transaction, userId: number): Promise<void> {
  await trx('groups').whereIn('id', trx('memberships').where({ user_id: userId, role: 'owner' }).select('group_id')).forUpdate().select('id');
}

/**
 * Deletes the account. Its audit events stay, marked as a deleted user's; its memberships,
 * personal access tokens, listed grants and session rows go with it (foreign keys cascade).
 */
export async function deleteUserKeepingAudit(trx: Knex.Transaction, id: number): Promise<void> {
  await trx('audit_events').where({ actor_id: id }).update({ actor_deleted: true });
  await trx('users').where({ id }).del();
}

/** What clearCredentials removed, by kind. */
export interface ClearedCredentials {
  passkeys: number;
  twoFactor: number;
  recoveryCodes: number;
  personalTokens: number;
}

/**
 * Removes every passkey, authenticator app, recovery code and personal access token of the
 * account (a reset of an account whose address was never proven: whoever added them may not be
 * the address's owner).
 */
export async function clearCredentials(trx: Knex.Transaction, userId: number): Promise<ClearedCredentials> {
  return {
    passkeys: await trx('webauthn_credentials').where({ user_id: userId }).delete(),
    twoFactor: await trx('user_totp').where({ user_id: userId }).delete(),
    recoveryCodes: await trx('recovery_codes').where({ user_id: userId }).delete(),
    personalTokens: await trx('personal_access_tokens').where({ user_id: userId }).delete(),
  };
}
