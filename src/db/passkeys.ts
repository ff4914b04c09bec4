import type { Knex } from 'knex';

export interface PasskeyRow {
  id: number;
  user_id: number;
  credential_id: string;
  public_key: string;
  counter: number | string;
  transports: string;
  name: string;
  created_at: string | Date;
  last_used_at: string | Date | null;
}

const COLUMNS = ['id', 'user_id', 'credential_id', 'public_key', 'counter', 'transports', 'name', 'created_at', 'last_used_at'];

export async function insertPasskey(
  db: Knex,
  passkey: { userId: number; credentialId: string; publicKey: string; counter: number; transports: string; name: string; at: string },
): Promise<boolean> {
  const inserted = await db('webauthn_credentials')
    .insert({
      user_id: passkey.userId,
      credential_id: passkey.credentialId,
      public_key: passkey.publicKey,
      counter: passkey.counter,
      transports: passkey.transports,
      name: passkey.name,
      created_at: passkey.at,
    })
    .onConflict('credential_id')
    .ignore()
    .returning('id');
  return inserted.length === 1;
}

export function passkeysOf(db: Knex, userId: number): Promise<PasskeyRow[]> {
  return db('webauthn_credentials').where({ user_id: userId }).orderBy('id').select(COLUMNS);
}

export function findPasskey(db: Knex, credentialId: string): Promise<PasskeyRow | undefined> {
  return db('webauthn_credentials').where({ credential_id: credentialId }).first(COLUMNS);
}

export async function recordPasskeyUse(db: Knex, id: number, counter: number, at: string): Promise<void> {
  await db('webauthn_credentials').where({ id }).update({ counter, last_used_at: at });
}

/** Deletes one of the user's passkeys; the row deleted, or undefined when there was none. */
export async function deletePasskey(db: Knex, userId: number, id: number): Promise<PasskeyRow | undefined> {
  const row = await db('webauthn_credentials').where({ user_id: userId, id }).first(COLUMNS);
  if (!row) return undefined;
  const deleted = await db('webauthn_credentials').where({ user_id: userId, id }).delete();
  return deleted ? (row as PasskeyRow) : undefined;
}

export async function deletePasskeysOf(db: Knex, userId: number): Promise<void> {
  await db('webauthn_credentials').where({ user_id: userId }).delete();
}

export function pruneSpentChallenges(db: Knex, at: string): Promise<number> {
  return db('webauthn_used_challenges').where('expires_at', '<', at).del();
}

/** Records a challenge as answered; false when it was answered before (any number of requests at once: one wins). */
export async function spendChallenge(db: Knex, digest: string, expiresAt: string): Promise<boolean> {
  const inserted = await db('webauthn_used_challenges').insert({ digest, expires_at: expiresAt }).onConflict('digest').ignore().returning('digest');
  return inserted.length === 1;
}
