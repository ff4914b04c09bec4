import type { Knex } from 'knex';
import type { Role } from '../vocabulary.js';
import { isPostgres } from './knex.js';
import { hasTwoFactorColumn } from './two-factor.js';

export interface GroupRow {
  id: number;
  name: string;
  path: string;
  description: string;
  visibility_level: 'private' | 'internal' | 'public';
  /** Members need two-factor authentication on to use the group (a 0/1 integer on SQLite). */
  require_two_factor: boolean | number;
  /** The longest lifetime of a personal access token the group accepts, in days; null, no cap. */
  personal_token_max_lifetime_days: number | null;
  created_at: string | Date;
  updated_at: string | Date;
}

export interface GroupWithRole extends GroupRow {
  role: Role;
}

export interface MemberRow {
  user_id: number;
  username: string;
  name: string;
  email: string;
  role: Role;
  created_at: string | Date;
  /** The member has two-factor authentication on. */
  two_factor: boolean | number;
}

const GROUP_COLUMNS = [
  'g.id', 'g.name', 'g.path', 'g.description', 'g.visibility_level', 'g.require_two_factor', 'g.personal_token_max_lifetime_days', 'g.created_at', 'g.updated_at',
];

/**
 * What a personal access token reaches of its user's groups: only the groups it is limited to
 * (when it is), and only groups whose cap on tokens' lifetime it does not exceed (see
 * policies/token-lifetime.ts for `lifetimeMs`, compared as `cap * 86400000 >= lifetimeMs`).
 */
export interface TokenReach {
  tokenId: number;
  limited: boolean;
  lifetimeMs: number;
}

export function findGroupById(db: Knex, id: number): Promise<GroupRow | undefined> {
  return db('groups').where({ id }).first();
}

export function findGroupByPath(db: Knex, path: string): Promise<GroupRow | undefined> {
  return db('groups').where({ path: path.toLowerCase() }).first();
}

export async function insertGroup(
  db: Knex,
  group: { name: string; path: string; description: string; visibilityLevel: string; at: string },
): Promise<GroupRow> {
  const [row] = await db('groups')
    .insert({
      name: group.name,
      path: group.path,
      description: group.description,
      visibility_level: group.visibilityLevel,
      created_at: group.at,
      updated_at: group.at,
    })
    .returning('*');
  return row as GroupRow;
}

export async function updateGroup(
  db: Knex,
  id: number,
  fields: { name: string; description: string; visibilityLevel: string; requireTwoFactor: boolean; personalTokenMaxLifetimeDays: number | null; at: string },
): Promise<void> {
  await db('groups').where({ id }).update({
    name: fields.name,
    description: fields.description,
    visibility_level: fields.visibilityLevel,
    require_two_factor: fields.requireTwoFactor,
    personal_token_max_lifetime_days: fields.personalTokenMaxLifetimeDays,
    updated_at: fields.at,
  });
}

/** A filter as a LIKE pattern matching it anywhere, its own `\\`, `%` and `_` taken literally. */
function likePattern(filter: string): string {
  return `%${filter.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

function groupsOfUser(db: Knex, userId: number, filter?: string, reach?: TokenReach) {
  const query = db('memberships as m').join('groups as g', 'g.id', 'm.group_id').where('m.user_id', userId);
  if (filter) {
    const like = likePattern(filter);
    query.andWhere((q) => q.whereRaw("lower(g.name) like ? escape '\\'", [like]).orWhereRaw("g.path like ? escape '\\'", [like]));
  }
  if (reach) query.andWhereRaw(REACH_SQL, reachBindings(reach));
  return query;
}

/** The condition a personal token's reach adds to the page query. */
const REACH_SQL =
  '(g.personal_token_max_lifetime_days is null or g.personal_token_max_lifetime_days * 86400000.0 >= ?)' +
  ' and (? = 0 or g.id in (select tg.group_id from personal_token_groups tg where tg.token_id = ?))';

function reachBindings(reach: TokenReach): Array<number> {
  return [reach.lifetimeMs, reach.limited ? 1 : 0, reach.tokenId];
}

/**
 * The page query of `GET /apis/v2/groups`, written out once per database and shape instead of
 * built with knex on every call (which cost a third of this function's CPU, see
 * docs/benchmarks.md). The total is a window count over the user's memberships: one round trip,
 * on the index memberships(user_id, group_id) then the groups' primary key, never a scan of all
 * groups. On PostgreSQL the timestamps travel as the ISO 8601 strings the API answers with
 * (milliseconds, UTC), made by PostgreSQL: pg's own timestamp parsing was another tenth of the
 * API's CPU, and making Dates only to print them again a few percent more. SQLite holds the ISO
 * strings the services write. Either way they pass through the presenter unchanged.
 */
const ISO_FORMAT = 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"';

function pageSql(postgres: boolean, filtered: boolean, reached: boolean): string {
  const time = (column: string) => (postgres ? `to_char(g.${column} at time zone 'UTC', '${ISO_FORMAT}')` : `g.${column}`);
  return [
    `select g.id, g.name, g.path, g.description, g.visibility_level, g.require_two_factor, g.personal_token_max_lifetime_days,`,
    `${time('created_at')} as created_at, ${time('updated_at')} as updated_at, m.role, count(*) over () as total_count`,
    `from memberships m join "groups" g on g.id = m.group_id`,
    `where m.user_id = ?${filtered ? ` and (lower(g.name) like ? escape '\\' or g.path like ? escape '\\')` : ''}${reached ? ` and ${REACH_SQL}` : ''}`,
    `order by g.id asc limit ? offset ?`,
  ].join(' ');
}

const shapes = (postgres: boolean) => ({
  all: pageSql(postgres, false, false),
  filtered: pageSql(postgres, true, false),
  reached: pageSql(postgres, false, true),
  'filtered-reached': pageSql(postgres, true, true),
});
const PAGE_SQL = { postgres: shapes(true), sqlite: shapes(false) };

interface PageRow extends GroupWithRole {
  total_count: number | string;
}

// Spelled out rather than spread: this runs for every row of every page.
function fromPageRow(row: PageRow): GroupWithRole {
  return {
    id: row.id,
    name: row.name,
    path: row.path,
    description: row.description,
    visibility_level: row.visibility_level,
    require_two_factor: row.require_two_factor,
    personal_token_max_lifetime_days: row.personal_token_max_lifetime_days === null ? null : Number(row.personal_token_max_lifetime_days),
    created_at: row.created_at,
    updated_at: row.updated_at,
    role: row.role,
  };
}

/**
 * One page of a user's groups in ascending id, and the total. Only a page past the end, which has
 * no row to carry the total, costs a second query. On PostgreSQL the page query is a named
 * prepared statement (parsed and planned once per connection; SQLite ignores the name, and it is
 * dropped under DATABASE_POOLING=transaction), one name per shape of its SQL, as pg refuses a name
 * reused for another text.
 */
export async function pageGroupsOfUser(
  db: Knex,
  userId: number,
  page: { limit: number; offset: number; filter?: string; reach?: TokenReach },
): Promise<{ total: number; items: GroupWithRole[] }> {
  const postgres = isPostgres(db);
  const shape = page.filter ? (page.reach ? 'filtered-reached' : 'filtered') : page.reach ? 'reached' : 'all';
  const sql = PAGE_SQL[postgres ? 'postgres' : 'sqlite'][shape];
  const bindings = [
    userId,
    ...(page.filter ? [likePattern(page.filter), likePattern(page.filter)] : []),
    ...(page.reach ? reachBindings(page.reach) : []),
    page.limit,
    page.offset,
  ];
  const result = await db.raw(sql, bindings).options({ name: `groups_page_${shape}` });
  const rows = (postgres ? result.rows : result) as PageRow[];
  if (rows.length === 0) {
    if (page.offset === 0) return { total: 0, items: [] };
    const count = await groupsOfUser(db, userId, page.filter, page.reach).count({ n: '*' }).first();
    return { total: Number((count as { n: number | string } | undefined)?.n ?? 0), items: [] };
  }
  return { total: Number(rows[0]!.total_count), items: rows.map(fromPageRow) };
}

export function findGroupOfUser(db: Knex, userId: number, groupId: number): Promise<GroupWithRole | undefined> {
  return groupsOfUser(db, userId).select([...GROUP_COLUMNS, 'm.role']).where('g.id', groupId).first();
}

/** A group by id or path, with the user's role in it (null: not a member), in one query. */
export async function findGroupAndRole(
  db: Knex,
  ref: { id: number } | { path: string },
  userId: number,
): Promise<(GroupRow & { role: Role | null; actor_two_factor: number }) | undefined> {
  return db('groups as g')
    .leftJoin('memberships as m', (on) => on.on('m.group_id', 'g.id').andOnVal('m.user_id', userId))
    .where('id' in ref ? { 'g.id': ref.id } : { 'g.path': ref.path.toLowerCase() })
    .first([...GROUP_COLUMNS, 'm.role', hasTwoFactorColumn(db, 'm.user_id', 'actor_two_factor')]);
}

export function findRole(db: Knex, groupId: number, userId: number): Promise<Role | undefined> {
  return db('memberships')
    .where({ group_id: groupId, user_id: userId })
    .first('role')
    .then((row: { role: Role } | undefined) => row?.role);
}

export function listMembers(db: Knex, groupId: number): Promise<MemberRow[]> {
  return db('memberships as m')
    .join('users as u', 'u.id', 'm.user_id')
    .where('m.group_id', groupId)
    .select('m.user_id', 'u.username', 'u.name', 'u.email', 'm.role', 'm.created_at', hasTwoFactorColumn(db, 'm.user_id', 'two_factor'))
    .orderBy('u.username_key', 'asc');
}

export async function countOwners(db: Knex, groupId: number): Promise<number> {
  const row = await db('memberships').where({ group_id: groupId, role: 'owner' }).count({ n: '*' }).first();
  return Number((row as { n: number | string } | undefined)?.n ?? 0);
}

/** Adds a membership; `managedBy`: the directory provider whose group mapping gives it. */
export async function insertMembership(db: Knex, m: { groupId: number; userId: number; role: Role; at: string; managedBy?: number }): Promise<void> {
  await db('memberships').insert({ group_id: m.groupId, user_id: m.userId, role: m.role, created_at: m.at, ...(m.managedBy ? { managed_by: m.managedBy } : {}) });
}

/** A member's role and the directory provider that manages the membership (null: a person gave it), its row locked; undefined when not a member. */
export async function lockManagedMembership(trx: Knex.Transaction, groupId: number, userId: number): Promise<{ role: Role; managedBy: number | null } | undefined> {
  const row = (await trx('memberships').where({ group_id: groupId, user_id: userId }).forUpdate().first('role', 'managed_by')) as { role: Role; managed_by: number | string | null } | undefined;
  return row && { role: row.role, managedBy: row.managed_by === null ? null : Number(row.managed_by) };
}

/** The memberships a removed directory provider managed become memberships a person gave. */
export async function releaseManagedMemberships(db: Knex, providerId: number): Promise<void> {
  await db('memberships').where({ managed_by: providerId }).update({ managed_by: null });
}

export async function setRole(db: Knex, groupId: number, userId: number, role: Role): Promise<void> {
  await db('memberships').where({ group_id: groupId, user_id: userId }).update({ role });
}

/** A role a person gave: the membership is theirs from then on, no longer a directory's to change. */
export async function setRoleByHand(db: Knex, groupId: number, userId: number, role: Role): Promise<void> {
  await db('memberships').where({ group_id: groupId, user_id: userId }).update({ role, managed_by: null });
}

export async function deleteMembership(db: Knex, groupId: number, userId: number): Promise<void> {
  await db('memberships').where({ group_id: groupId, user_id: userId }).delete();
}

/** A member's role, its row locked until the transaction ends; undefined when not a member. */
export async function lockMembership(trx: Knex.Transaction, groupId: number, userId: number): Promise<Role | undefined> {
  const row = (await trx('memberships').where({ group_id: groupId, user_id: userId }).forUpdate().first('role')) as { role: Role } | undefined;
  return row?.role;
}

/** Locks a group's row until the transaction ends: changes to one group's owners run one at a time on PostgreSQL. */
export async function lockGroup(trx: Knex.Transaction, groupId: number): Promise<void> {
  await trx('groups').where({ id: groupId }).forUpdate().first('id');
}

export async function countMembers(db: Knex, groupId: number): Promise<number> {
  const row = await db('memberships').where({ group_id: groupId }).count({ n: '*' }).first();
  return Number((row as { n: number | string } | undefined)?.n ?? 0);
}

/**
 * Deletes a group; its memberships, applications (with their secrets and listed grants) and its
 * own audit events go with it (ON DELETE CASCADE). True when this call deleted it.
 */
export async function deleteGroupRow(db: Knex, groupId: number): Promise<boolean> {
  return (await db('groups').where({ id: groupId }).delete()) === 1;
}
