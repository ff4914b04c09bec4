import type { Knex } from 'knex';

/** An upstream identity linked to an account. */
export interface IdentityRow {
  id: number;
  user_id: number;
  provider_id: number;
  /** The upstream's stable subject (`sub`, or GitHub's numeric user id). */
  subject: string;
  /** The upstream's login or preferred username, as shown on Sign-in methods. */
  username: string;
  email: string;
  created_at: string | Date;
  last_used_at: string | Date | null;
  /** A directory (LDAP) no longer had the person, and the account was disabled for it. */
  suspended_at?: string | Date | null;
}

const TABLE = 'user_identities';

export function findIdentity(db: Knex, providerId: number, subject: string): Promise<IdentityRow | undefined> {
  return db(TABLE).where({ provider_id: providerId, subject }).first();
}

/** An account's linked identities, each with its provider's slug, name and kind. */
export function identitiesOf(db: Knex, userId: number): Promise<(IdentityRow & { slug: string; provider_name: string; kind: string; provider_disabled_at: string | Date | null })[]> {
  return db(TABLE)
    .join('sign_in_providers as p', 'p.id', `${TABLE}.provider_id`)
    .where({ [`${TABLE}.user_id`]: userId })
    .orderBy(`${TABLE}.id`)
    .select(`${TABLE}.*`, 'p.slug', 'p.name as provider_name', 'p.kind', 'p.disabled_at as provider_disabled_at');
}

/** Links an identity; false when the subject is linked already (to anyone) or the account has one for this provider. */
export async function insertIdentity(
  db: Knex,
  identity: { userId: number; providerId: number; subject: string; username: string; email: string; at: string },
): Promise<boolean> {
  const inserted = await db(TABLE)
    .insert({ user_id: identity.userId, provider_id: identity.providerId, subject: identity.subject, username: identity.username, email: identity.email, created_at: identity.at })
    .onConflict()
    .ignore()
    .returning('id');
  return inserted.length === 1;
}

export async function recordIdentityUse(db: Knex, id: number, details: { username: string; email: string }, at: string): Promise<void> {
  await db(TABLE).where({ id }).update({ ...details, last_used_at: at });
}

/** Unlinks one of the account's identities; the row removed, or undefined when there was none. */
export async function deleteIdentity(db: Knex, userId: number, id: number): Promise<IdentityRow | undefined> {
  // Read, then deleted only if still there: knex's SQLite client answers a delete with a count, not rows.
  const row = (await db(TABLE).where({ id, user_id: userId }).first()) as IdentityRow | undefined;
  if (!row) return undefined;
  return (await db(TABLE).where({ id, user_id: userId }).delete()) === 1 ? row : undefined;
}

export async function countIdentities(db: Knex, userId: number): Promise<number> {
  const row = await db(TABLE).where({ user_id: userId }).count<{ n: number | string }[]>({ n: '*' }).first();
  return Number(row?.n ?? 0);
}

/**
 * What an account could still sign in with, read with its row locked for the rest of `trx` (on
 * PostgreSQL; SQLite runs one writing transaction at a time): its password hash, how many
 * passkeys it has, and its linked identities with whether their provider is enabled. Two
 * unlinks of one account's last ways in then see each other's result, never the same two rows.
 */
export async function waysInLocked(trx: Knex.Transaction, userId: number): Promise<{ passwordHash: string; passkeys: number; identities: { id: number; enabled: boolean }[] } | undefined> {
  const user = (await trx('users').where({ id: userId }).forUpdate().first('password_hash')) as { password_hash: string } | undefined;
  if (!user) return undefined;
  const passkeys = await trx('webauthn_credentials').where({ user_id: userId }).count<{ n: number | string }[]>({ n: '*' }).first();
  const identities = (await trx(TABLE)
    .join('sign_in_providers as p', 'p.id', `${TABLE}.provider_id`)
    .where({ [`${TABLE}.user_id`]: userId })
    .select(`${TABLE}.id`, 'p.disabled_at')) as { id: number; disabled_at: string | Date | null }[];
  return {
    passwordHash: user.password_hash,
    passkeys: Number(passkeys?.n ?? 0),
    identities: identities.map((row) => ({ id: Number(row.id), enabled: row.disabled_at === null })),
  };
}

/** Every identity linked through one provider, oldest first. */
export function identitiesOfProvider(db: Knex, providerId: number): Promise<IdentityRow[]> {
  return db(TABLE).where({ provider_id: providerId }).orderBy('id').select('*');
}

/** Marks the identity's account as disabled by its directory (`at`), or no longer (null); false when it already was so. */
export async function setIdentitySuspended(db: Knex, id: number, at: string | null): Promise<boolean> {
  const rows = db(TABLE).where({ id });
  return (await (at ? rows.whereNull('suspended_at') : rows.whereNotNull('suspended_at')).update({ suspended_at: at })) === 1;
}
