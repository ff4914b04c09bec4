import type { Knex } from 'knex';

export interface AccessTokenRow {
  id: number;
  user_id: number;
  name: string;
  digest: string;
  scopes: string;
  created_at: string | Date;
  last_used_at: string | Date | null;
  expires_at: string | Date | null;
}

const COLUMNS = ['id', 'user_id', 'name', 'scopes', 'created_at', 'last_used_at', 'expires_at'];

/** The bearer check's one query: by digest, on a unique index. */
export function findAccessTokenByDigest(db: Knex, digest: string): Promise<Omit<AccessTokenRow, 'digest'> | undefined> {
  return db('personal_access_tokens').where({ digest }).first(COLUMNS);
}

export function listAccessTokens(db: Knex, userId: number): Promise<Array<Omit<AccessTokenRow, 'digest'>>> {
  return db('personal_access_tokens').where({ user_id: userId }).orderBy('id', 'desc').select(COLUMNS);
}

export async function insertAccessToken(
  db: Knex,
  token: { userId: number; name: string; digest: string; scopes: string; expiresAt: string | null; at: string },
): Promise<Omit<AccessTokenRow, 'digest'>> {
  const [row] = await db('personal_access_tokens')
    .insert({
      user_id: token.userId,
      name: token.name,
      digest: token.digest,
      scopes: token.scopes,
      expires_at: token.expiresAt,
      created_at: token.at,
    })
    .returning(COLUMNS);
  return row;
}

export function deleteAccessToken(db: Knex, userId: number, id: number): Promise<number> {
  return db('personal_access_tokens').where({ user_id: userId, id }).delete();
}

export async function touchAccessToken(db: Knex, id: number, at: string): Promise<void> {
  await db('personal_access_tokens').where({ id }).update({ last_used_at: at });
}
