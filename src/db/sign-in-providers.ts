import type { Knex } from 'knex';

export interface SignInProviderRow {
  id: number;
  slug: string;
  kind: string;
  name: string;
  client_id: string;
  /** Sealed with KEYS_SECRET (`enc:v1:…`), or clear when none is set. */
  client_secret: string;
  /** Space-separated. */
  scopes: string;
  /** The kind's own settings, JSON. */
  settings: string;
  allow_sign_up: boolean | number;
  /** Space-separated e-mail domains; empty allows any. */
  allowed_domains: string;
  trust_mfa: boolean | number;
  position: number;
  disabled_at: string | Date | null;
  created_at: string | Date;
  updated_at: string | Date;
}

export type SignInProviderFields = Omit<SignInProviderRow, 'id' | 'created_at' | 'updated_at' | 'disabled_at'>;

const TABLE = 'sign_in_providers';

export function listSignInProviders(db: Knex): Promise<SignInProviderRow[]> {
  return db(TABLE).orderBy([{ column: 'position' }, { column: 'id' }]).select('*');
}

/** The providers the sign-in pages offer, in their order. */
export function enabledSignInProviders(db: Knex): Promise<SignInProviderRow[]> {
  return db(TABLE).whereNull('disabled_at').orderBy([{ column: 'position' }, { column: 'id' }]).select('*');
}

export function findSignInProvider(db: Knex, slug: string): Promise<SignInProviderRow | undefined> {
  return db(TABLE).where({ slug }).first();
}

export function findSignInProviderById(db: Knex, id: number): Promise<SignInProviderRow | undefined> {
  return db(TABLE).where({ id }).first();
}

/** Inserts a provider; undefined when its slug is taken. */
export async function insertSignInProvider(db: Knex, fields: SignInProviderFields, at: string): Promise<SignInProviderRow | undefined> {
  const [row] = await db(TABLE).insert({ ...fields, created_at: at, updated_at: at }).onConflict('slug').ignore().returning('*');
  return row as SignInProviderRow | undefined;
}

export async function updateSignInProvider(db: Knex, id: number, fields: Partial<SignInProviderFields> & { disabled_at?: string | null }, at: string): Promise<SignInProviderRow | undefined> {
  const [row] = await db(TABLE).where({ id }).update({ ...fields, updated_at: at }).returning('*');
  return row as SignInProviderRow | undefined;
}

/** Removes a provider and, with it, every identity linked through it. */
export async function deleteSignInProvider(db: Knex, id: number): Promise<boolean> {
  return (await db(TABLE).where({ id }).delete()) === 1;
}

/** How many identities are linked through each provider, by provider id (providers with none are absent). */
export async function identityCountsByProvider(db: Knex): Promise<Map<number, number>> {
  const rows = await db('user_identities').groupBy('provider_id').select('provider_id').count<{ provider_id: number; n: number | string }[]>({ n: '*' });
  return new Map(rows.map((row) => [Number(row.provider_id), Number(row.n)]));
}

/** How many identities are linked through one provider. */
export async function countProviderIdentities(db: Knex, providerId: number): Promise<number> {
  const row = await db('user_identities').where({ provider_id: providerId }).count<{ n: number | string }[]>({ n: '*' }).first();
  return Number(row?.n ?? 0);
}

/**
 * The accounts whose only way to sign in is this provider: linked through it, with no password
 * (`noPasswordHash`'s prefix), no passkey and no identity at another enabled provider.
 */
export async function countAccountsOnlyThrough(db: Knex, providerId: number, noPasswordPrefix: string): Promise<number> {
  const row = await db('user_identities as i')
    .join('users as u', 'u.id', 'i.user_id')
    .where('i.provider_id', providerId)
    .whereRaw(`substr(u.password_hash, 1, ${Number(noPasswordPrefix.length)}) = ?`, [noPasswordPrefix])
    .whereNotExists((q) => q.select(db.raw('1')).from('webauthn_credentials as w').whereRaw('w.user_id = u.id'))
    .whereNotExists((q) => q.select(db.raw('1')).from('user_identities as o')
      .join('sign_in_providers as op', 'op.id', 'o.provider_id')
      .whereRaw('o.user_id = u.id').whereRaw('o.provider_id <> i.provider_id').whereNull('op.disabled_at'))
    .count<{ n: number | string }[]>({ n: '*' })
    .first();
  return Number(row?.n ?? 0);
}

/** The highest position in use, or -1 with no provider. */
export async function lastSignInProviderPosition(db: Knex): Promise<number> {
  const row = await db(TABLE).max<{ p: number | string | null }[]>({ p: 'position' }).first();
  return row?.p === null || row?.p === undefined ? -1 : Number(row.p);
}

/** Claims a provider's periodic check: true when it was last checked at or before `dueBefore` (or never), and it is now marked checked `at`. */
export async function claimProviderCheck(db: Knex, id: number, dueBefore: string, at: string): Promise<boolean> {
  const claimed = await db(TABLE)
    .where({ id })
    .where((q) => q.whereNull('checked_at').orWhere('checked_at', '<=', dueBefore))
    .update({ checked_at: at });
  return claimed === 1;
}
