import type { Knex } from 'knex';

export interface TotpRow {
  user_id: number;
  secret: string;
  last_step: number | string | null;
  confirmed_at: string | Date | null;
}

/** Whether the user in column `userColumn` has two-factor authentication on, as a 0/1 column. */
export function hasTwoFactorColumn(db: Knex, userColumn: string, as: string) {
  return db.raw(`case when exists (select 1 from user_totp t where t.user_id = ${userColumn} and t.confirmed_at is not null) then 1 else 0 end as ${as}`);
}

export function findTotp(db: Knex, userId: number): Promise<TotpRow | undefined> {
  return db('user_totp').where({ user_id: userId }).first('user_id', 'secret', 'last_step', 'confirmed_at');
}

/** Starts (or starts again) a set-up: a new, unconfirmed secret. A confirmed one is never replaced here. */
export async function saveUnconfirmedTotp(db: Knex, userId: number, secret: string, at: string): Promise<void> {
  await db('user_totp')
    .insert({ user_id: userId, secret, created_at: at })
    .onConflict('user_id')
    .merge({ secret, created_at: at, last_step: null })
    .whereNull('user_totp.confirmed_at');
}

/**
 * Records `step` as the last accepted code's step, if it is later than the last one, in one
 * conditional update: of any number of requests presenting the same code at once, exactly one
 * is accepted. With `confirm`, also marks a set-up in progress confirmed.
 */
export async function acceptTotpStep(db: Knex, userId: number, step: number, at: string, confirm: boolean): Promise<boolean> {
  const query = db('user_totp')
    .where({ user_id: userId })
    .where((q) => q.whereNull('last_step').orWhere('last_step', '<', step));
  if (confirm) query.whereNull('confirmed_at');
  else query.whereNotNull('confirmed_at');
  const updated = await query.update(confirm ? { last_step: step, confirmed_at: at } : { last_step: step });
  return updated === 1;
}

export async function deleteTotp(db: Knex, userId: number): Promise<void> {
  await db('user_totp').where({ user_id: userId }).delete();
}

export async function replaceRecoveryCodes(db: Knex, userId: number, digests: string[], at: string): Promise<void> {
  await db('recovery_codes').where({ user_id: userId }).delete();
  await db('recovery_codes').insert(digests.map((digest) => ({ user_id: userId, digest, created_at: at })));
}

export async function deleteRecoveryCodes(db: Knex, userId: number): Promise<void> {
  await db('recovery_codes').where({ user_id: userId }).delete();
}

/** Spends a recovery code if it is the user's and unused, in one conditional update (single use under concurrency). */
export async function useRecoveryCode(db: Knex, userId: number, digest: string, at: string): Promise<boolean> {
  const updated = await db('recovery_codes').where({ user_id: userId, digest }).whereNull('used_at').update({ used_at: at });
  return updated === 1;
}

export async function unusedRecoveryCodes(db: Knex, userId: number): Promise<number> {
  const row = await db('recovery_codes').where({ user_id: userId }).whereNull('used_at').count({ n: '*' }).first();
  return Number(row?.n ?? 0);
}

/** When the user's current recovery codes were made (they are made ten at a time), if they have any. */
export async function recoveryCodesMadeAt(db: Knex, userId: number): Promise<string | Date | undefined> {
  const row = await db('recovery_codes').where({ user_id: userId }).max({ at: 'created_at' }).first();
  return row?.at ?? undefined;
}
