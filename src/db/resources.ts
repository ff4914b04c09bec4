import type { Knex } from 'knex';
import type { TokenFormat } from '../vocabulary.js';

export interface ResourceRow {
  id: number;
  group_id: number;
  identifier: string;
  name: string;
  /** A JSON array of `{ name, description }`. */
  scopes: string;
  token_format: TokenFormat;
  client_id: string;
  secret_digest: string;
  secret_last_four: string;
  created_at: string | Date;
  updated_at: string | Date;
}

export interface ResourceScope {
  name: string;
  description: string;
}

/** A resource (a protected API, such as an MCP server) as the pages and the API show it; never its secret. */
export interface Resource {
  id: number;
  groupId: number;
  identifier: string;
  name: string;
  scopes: ResourceScope[];
  tokenFormat: TokenFormat;
  /** The client id its server authenticates with at the introspection endpoint. */
  clientId: string;
  /** The last four characters of its introspection secret, to tell which one a server holds. */
  secretLastFour: string;
  createdAt: string | Date;
  updatedAt: string | Date;
}

export interface ResourceFields {
  identifier: string;
  name: string;
  scopes: ResourceScope[];
  tokenFormat: TokenFormat;
}

/** The introspection client id of a resource begins so: apart from applications' (20 hex digits), so the two never meet. */
export const RESOURCE_CLIENT_PREFIX = 'rs_';

export function isResourceClientId(clientId: string): boolean {
  return clientId.startsWith(RESOURCE_CLIENT_PREFIX);
}

export function listResources(db: Knex, groupId: number): Promise<ResourceRow[]> {
  return db('resources').where({ group_id: groupId }).orderBy('id');
}

export function countResources(db: Knex, groupId: number): Promise<number> {
  return db('resources').where({ group_id: groupId }).count({ n: '*' }).first().then((row) => Number(row?.n ?? 0));
}

export function findResource(db: Knex, groupId: number, id: number): Promise<ResourceRow | undefined> {
  return db('resources').where({ group_id: groupId, id }).first();
}

/** The resource a `resource` parameter names, with its group's name (for the consent page). */
export function findResourceByIdentifier(db: Knex, identifier: string): Promise<(ResourceRow & { group_name: string }) | undefined> {
  return db('resources as r').join('groups as g', 'g.id', 'r.group_id').where('r.identifier', identifier).first('r.*', 'g.name as group_name');
}

/** The resource whose server introspects with this client id. */
export function findResourceByClientId(db: Knex, clientId: string): Promise<ResourceRow | undefined> {
  return db('resources').where({ client_id: clientId }).first();
}

export async function insertResource(
  db: Knex,
  groupId: number,
  fields: ResourceFields & { clientId: string; secretDigest: string; secretLastFour: string },
  at: string,
): Promise<ResourceRow> {
  const row = {
    group_id: groupId,
    identifier: fields.identifier,
    name: fields.name,
    scopes: JSON.stringify(fields.scopes),
    token_format: fields.tokenFormat,
    client_id: fields.clientId,
    secret_digest: fields.secretDigest,
    secret_last_four: fields.secretLastFour,
    created_at: at,
    updated_at: at,
  };
  const [inserted] = await db('resources').insert(row).returning('id');
  const id = typeof inserted === 'object' ? (inserted as { id: number }).id : inserted;
  return { ...row, id: Number(id) };
}

/** Writes the changed fields; false when the resource is gone. */
export async function updateResource(
  db: Knex,
  groupId: number,
  id: number,
  fields: Partial<ResourceFields> & { secretDigest?: string; secretLastFour?: string },
  at: string,
): Promise<boolean> {
  const changes: Record<string, unknown> = { updated_at: at };
  if (fields.identifier !== undefined) changes.identifier = fields.identifier;
  if (fields.name !== undefined) changes.name = fields.name;
  if (fields.scopes !== undefined) changes.scopes = JSON.stringify(fields.scopes);
  if (fields.tokenFormat !== undefined) changes.token_format = fields.tokenFormat;
  if (fields.secretDigest !== undefined) changes.secret_digest = fields.secretDigest;
  if (fields.secretLastFour !== undefined) changes.secret_last_four = fields.secretLastFour;
  return (await db('resources').where({ group_id: groupId, id }).update(changes)) > 0;
}

export async function deleteResource(db: Knex, groupId: number, id: number): Promise<boolean> {
  return (await db('resources').where({ group_id: groupId, id }).delete()) > 0;
}
