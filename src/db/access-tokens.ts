import type { Knex } from 'knex';
import { isPostgres } from './knex.js';

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

/** A personal access token by the digest of its value. */
export function findAccessTokenByDigest(db: Knex, digest: string): Promise<Omit<AccessTokenRow, 'digest'> | undefined> {
  return db('personal_access_tokens').where({ digest }).first(COLUMNS);
}

/**
 * The bearer check's one query, on every API call with an `ha_` token: by digest, on a unique
 * index, only what the check needs. Written out rather than built with knex on every call, and a
 * named prepared statement on PostgreSQL (parsed and planned once per connection; SQLite ignores
 * the name; unnamed under DATABASE_POOLING=transaction): see docs/benchmarks.md. The join on the
 * user's primary key tells a disabled account.
 */
const BEARER_SQL =
  'select t.id, t.user_id, t.scopes, t.expires_at, u.disabled_at from personal_access_tokens t join users u on u.id = t.user_id where t.digest = ? limit 1';

/** A bearer token's row, with whether its user is disabled (`disabled_at`), in the same round trip. */
export type BearerTokenRow = Pick<AccessTokenRow, 'id' | 'user_id' | 'scopes' | 'expires_at'> & { disabled_at: string | Date | null };

export async function findBearerTokenByDigest(db: Knex, digest: string): Promise<BearerTokenRow | undefined> {
  const result = await db.raw(BEARER_SQL, [digest]).options({ name: 'bearer_token_by_digest' });
  return (isPostgres(db) ? result.rows : result)[0];
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

/** Removes every personal access token of a user; how many there were. */
export function deleteAccessTokensOf(db: Knex, userId: number): Promise<number> {
  return db('personal_access_tokens').where({ user_id: userId }).delete();
}
