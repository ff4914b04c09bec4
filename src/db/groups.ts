import type { Knex } from 'knex';
import type { Role } from '../services/rules.js';

export interface GroupRow {
  id: number;
  name: string;
  path: string;
  description: string;
  visibility_level: 'private' | 'internal' | 'public';
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
}

const GROUP_COLUMNS = ['g.id', 'g.name', 'g.path', 'g.description', 'g.visibility_level', 'g.created_at', 'g.updated_at'];

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
  fields: { name: string; description: string; visibilityLevel: string; at: string },
): Promise<void> {
  await db('groups').where({ id }).update({
    name: fields.name,
    description: fields.description,
    visibility_level: fields.visibilityLevel,
    updated_at: fields.at,
  });
}

function groupsOfUser(db: Knex, userId: number, filter?: string) {
  const query = db('memberships as m').join('groups as g', 'g.id', 'm.group_id').where('m.user_id', userId);
  if (filter) {
    const like = `%${filter.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    query.andWhere((q) => q.whereRaw("lower(g.name) like ? escape '\\'", [like]).orWhereRaw("g.path like ? escape '\\'", [like]));
  }
  return query;
}

/** One page of a user's groups in ascending id, and the total: two indexed queries, no scan of all groups. */
export async function pageGroupsOfUser(
  db: Knex,
  userId: number,
  page: { limit: number; offset: number; filter?: string },
): Promise<{ total: number; items: GroupWithRole[] }> {
  const [items, count] = await Promise.all([
    groupsOfUser(db, userId, page.filter)
      .select([...GROUP_COLUMNS, 'm.role'])
      .orderBy('g.id', 'asc')
      .limit(page.limit)
      .offset(page.offset),
    groupsOfUser(db, userId, page.filter).count({ n: '*' }).first(),
  ]);
  return { total: Number((count as { n: number | string } | undefined)?.n ?? 0), items: items as GroupWithRole[] };
}

export function findGroupOfUser(db: Knex, userId: number, groupId: number): Promise<GroupWithRole | undefined> {
  return groupsOfUser(db, userId).select([...GROUP_COLUMNS, 'm.role']).where('g.id', groupId).first();
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
    .select('m.user_id', 'u.username', 'u.name', 'u.email', 'm.role', 'm.created_at')
    .orderBy('u.username_key', 'asc');
}

export async function countOwners(db: Knex, groupId: number): Promise<number> {
  const row = await db('memberships').where({ group_id: groupId, role: 'owner' }).count({ n: '*' }).first();
  return Number((row as { n: number | string } | undefined)?.n ?? 0);
}

export async function insertMembership(db: Knex, m: { groupId: number; userId: number; role: Role; at: string }): Promise<void> {
  await db('memberships').insert({ group_id: m.groupId, user_id: m.userId, role: m.role, created_at: m.at });
}

export async function setRole(db: Knex, groupId: number, userId: number, role: Role): Promise<void> {
  await db('memberships').where({ group_id: groupId, user_id: userId }).update({ role });
}

export async function deleteMembership(db: Knex, groupId: number, userId: number): Promise<void> {
  await db('memberships').where({ group_id: groupId, user_id: userId }).delete();
}
