import type { Knex } from 'knex';

export interface UserGrantRow {
  user_id: number;
  client_id: string;
  grant_id: string;
  scopes: string;
  created_at: string | Date;
  last_used_at: string | Date | null;
}

export function findUserGrant(db: Knex, userId: number, clientId: string): Promise<UserGrantRow | undefined> {
  return db('user_grants').where({ user_id: userId, client_id: clientId }).first();
}

/**
 * Lists a grant for a user and application unless one is listed already; true when this call
 * listed it. The primary key (user, application) makes two concurrent consents converge: one
 * insert wins, the other learns it lost and joins the winner's grant.
 */
export async function insertUserGrant(
  db: Knex,
  grant: { userId: number; clientId: string; grantId: string; scopes: string; at: string },
): Promise<boolean> {
  const inserted = await db('user_grants')
    .insert({
      user_id: grant.userId,
      client_id: grant.clientId,
      grant_id: grant.grantId,
      scopes: grant.scopes,
      created_at: grant.at,
      last_used_at: grant.at,
    })
    .onConflict(['user_id', 'client_id'])
    .ignore()
    .returning('grant_id');
  return inserted.length === 1;
}

/**
 * Points the row at `grantId` with these scopes, only while it still points at `expected`;
 * true when it did. A concurrent consent or revoke in the meantime makes it false.
 */
export async function updateUserGrant(
  db: Knex,
  grant: { userId: number; clientId: string; expected: string; grantId: string; scopes: string; at: string },
): Promise<boolean> {
  const changed = await db('user_grants')
    .where({ user_id: grant.userId, client_id: grant.clientId, grant_id: grant.expected })
    .update({ grant_id: grant.grantId, scopes: grant.scopes, last_used_at: grant.at });
  return changed === 1;
}

export function listUserGrants(db: Knex, userId: number) {
  return db('user_grants as ug')
    .join('oauth_apps as a', 'a.client_id', 'ug.client_id')
    .join('groups as g', 'g.id', 'a.group_id')
    .where('ug.user_id', userId)
    .select('ug.client_id', 'ug.grant_id', 'ug.scopes', 'ug.created_at', 'ug.last_used_at', 'a.name as app_name', 'a.homepage_url', 'g.name as group_name')
    .orderBy('ug.created_at', 'desc');
}

/**
 * With `grantId`, the row goes only while it still points at that grant: a consent given in the
 * meantime (which replaces grant_id) keeps its row, so a live grant is never left unlisted.
 */
export async function deleteUserGrant(db: Knex, userId: number, clientId: string, grantId?: string): Promise<UserGrantRow | undefined> {
  const row = await findUserGrant(db, userId, clientId);
  if (!row || (grantId !== undefined && row.grant_id !== grantId)) return undefined;
  await db('user_grants').where({ user_id: userId, client_id: clientId, grant_id: row.grant_id }).delete();
  return row;
}

export async function grantIdsOfClient(db: Knex, clientId: string): Promise<string[]> {
  const rows = await db('user_grants').where({ client_id: clientId }).select('grant_id');
  return rows.map((r: { grant_id: string }) => r.grant_id);
}

export async function touchUserGrant(db: Knex, grantId: string, at: string): Promise<void> {
  await db('user_grants').where({ grant_id: grantId }).update({ last_used_at: at });
}

/** Unlists a grant that no longer exists (the provider revoked it), whoever it belonged to. */
export async function deleteUserGrantByGrantId(db: Knex, grantId: string): Promise<void> {
  await db('user_grants').where({ grant_id: grantId }).delete();
}

/** How many users have authorized an application (each has one listed grant). */
export async function countGrantsOfClient(db: Knex, clientId: string): Promise<number> {
  const row = await db('user_grants').where({ client_id: clientId }).count({ n: '*' }).first();
  return Number((row as { n: number | string } | undefined)?.n ?? 0);
}

/** The listed grants of every application of a group. */
export async function grantIdsOfGroup(db: Knex, groupId: number): Promise<string[]> {
  const rows = await db('user_grants as ug')
    .join('oauth_apps as a', 'a.client_id', 'ug.client_id')
    .where('a.group_id', groupId)
    .select('ug.grant_id');
  return rows.map((r: { grant_id: string }) => r.grant_id);
}
