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
  /** The token acts only in the groups `personal_token_groups` lists for it (a 0/1 integer on SQLite). */
  groups_limited: boolean | number;
}

const COLUMNS = ['id', 'user_id', 'name', 'scopes', 'created_at', 'last_used_at', 'expires_at', 'groups_limited'];

/** The personal access tokens among `digests` (digests of their values), in one query. */
export function findAccessTokensByDigests(db: Knex, digests: string[]): Promise<Array<Omit<AccessTokenRow, 'digest'>>> {
  if (!digests.length) return Promise.resolve([]);
  return db('personal_access_tokens').whereIn('digest', digests).orderBy('id').select(COLUMNS);
}

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
  'select t.id, t.user_id, t.scopes, t.created_at, t.expires_at, t.groups_limited, u.disabled_at from personal_access_tokens t join users u on u.id = t.user_id where t.digest = ? limit 1';

/** A bearer token's row, with whether its user is disabled (`disabled_at`), in the same round trip. */
export type BearerTokenRow = Pick<AccessTokenRow, 'id' | 'user_id' | 'scopes' | 'created_at' | 'expires_at' | 'groups_limited'> & {
  disabled_at: string | Date | null;
};

export async function findBearerTokenByDigest(db: Knex, digest: string): Promise<BearerTokenRow | undefined> {
  const result = await db.raw(BEARER_SQL, [digest]).options({ name: 'bearer_token_by_digest' });
  return (isPostgres(db) ? result.rows : result)[0];
}

export function listAccessTokens(db: Knex, userId: number): Promise<Array<Omit<AccessTokenRow, 'digest'>>> {
  return db('personal_access_tokens').where({ user_id: userId }).orderBy('id', 'desc').select(COLUMNS);
}

/** `groupIds`: the only groups the token acts in; undefined, all its user's groups. */
export async function insertAccessToken(
  db: Knex,
  token: { userId: number; name: string; digest: string; scopes: string; expiresAt: string | null; at: string; groupIds?: readonly number[] },
): Promise<Omit<AccessTokenRow, 'digest'>> {
  const [row] = await db('personal_access_tokens')
    .insert({
      user_id: token.userId,
      name: token.name,
      digest: token.digest,
      scopes: token.scopes,
      expires_at: token.expiresAt,
      created_at: token.at,
      groups_limited: token.groupIds !== undefined,
    })
    .returning(COLUMNS);
  if (token.groupIds?.length) {
    await db('personal_token_groups').insert(token.groupIds.map((groupId) => ({ token_id: row.id, group_id: groupId })));
  }
  return row;
}

/** The ids of the groups a limited token acts in. */
export async function groupIdsOfToken(db: Knex, tokenId: number): Promise<number[]> {
  const rows = (await db('personal_token_groups').where({ token_id: tokenId }).select('group_id')) as Array<{ group_id: number }>;
  return rows.map((r) => Number(r.group_id));
}

/** A group a token is limited to, as the pages and the CLI name it. */
export interface TokenGroup {
  id: number;
  name: string;
  path: string;
}

/** The groups each of `tokenIds` is limited to, by token id. */
export async function groupsOfTokens(db: Knex, tokenIds: readonly number[]): Promise<Map<number, TokenGroup[]>> {
  const byToken = new Map<number, TokenGroup[]>();
  if (!tokenIds.length) return byToken;
  const rows = (await db('personal_token_groups as tg')
    .join('groups as g', 'g.id', 'tg.group_id')
    .whereIn('tg.token_id', tokenIds)
    .select('tg.token_id', 'g.id', 'g.name', 'g.path')
    .orderBy('g.name', 'asc')) as Array<{ token_id: number; id: number; name: string; path: string }>;
  for (const r of rows) {
    const list = byToken.get(Number(r.token_id)) ?? [];
    list.push({ id: Number(r.id), name: r.name, path: r.path });
    byToken.set(Number(r.token_id), list);
  }
  return byToken;
}

/** Deletes one token by id (whoever's it is); true when this call deleted it. */
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

/** Those of `groupIds` that cap the lifetime of personal access tokens, with their caps in days, by name. */
export async function lifetimeCapsOf(db: Knex, groupIds: readonly number[]): Promise<Array<{ name: string; days: number }>> {
  const rows = (await db('groups').whereIn('id', groupIds).whereNotNull('personal_token_max_lifetime_days').orderBy('name')
    .select('name', 'personal_token_max_lifetime_days as days')) as Array<{ name: string; days: number | string }>;
  return rows.map((r) => ({ name: r.name, days: Number(r.days) }));
}

/**
 * Which of `groupIds` the user is a member of. Inside a transaction on PostgreSQL, the groups' rows
 * and then the membership rows stay locked until it ends (groups first, as a group's deletion
 * locks them, so the two wait for each other instead of deadlocking): neither the group's deletion
 * nor the member's removal can slip in between this check and what the transaction writes next.
 */
export async function groupIdsOfMember(db: Knex, userId: number, groupIds: readonly number[]): Promise<number[]> {
  await db('groups').whereIn('id', groupIds).orderBy('id').forShare().select('id');
  const rows = (await db('memberships').where({ user_id: userId }).whereIn('group_id', groupIds).forShare().select('group_id')) as Array<{ group_id: number }>;
  return rows.map((r) => Number(r.group_id));
}
