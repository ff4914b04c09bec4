import type { Knex } from 'knex';
import type { ClientType } from '../vocabulary.js';

export interface AppRow {
  id: number;
  client_id: string;
  group_id: number;
  name: string;
  homepage_url: string;
  description: string;
  callback_url: string;
  /** Sign-out redirect URLs, stored as a JSON array of strings (see `signOutUrlsOf`). */
  sign_out_urls: string;
  /** Fixed when the application is registered: a public client has no secret and must use PKCE. */
  client_type: ClientType;
  /** May use the device authorization grant (RFC 8628); SQLite reads a boolean back as 0 or 1. */
  device_flow: boolean | number;
  /** Its authorization requests must be pushed first (RFC 9126); 0 or 1 on SQLite. */
  require_pushed_authorization_requests: boolean | number;
  /** Where logout tokens are POSTed (Back-Channel Logout 1.0); null for none. */
  backchannel_logout_uri: string | null;
  /** May act as itself with the client credentials grant (confidential only); 0 or 1 on SQLite. */
  allow_client_credentials: boolean | number;
  /** How a client registered itself without a person: `metadata_document` or `dynamic`; null for a person's application. */
  registered_by?: string | null;
  /** The host of its metadata document, or the address that registered it. */
  registered_from?: string | null;
  /** Every redirect URI of a self-registered client (a JSON array); null for a person's application, which has callback_url only. */
  redirect_uris?: string | null;
  created_at: string | Date;
  updated_at: string | Date;
}

/** The stored sign-out redirect URLs of an application as a list. */
export function signOutUrlsOf(app: Pick<AppRow, 'sign_out_urls'>): string[] {
  const parsed: unknown = JSON.parse(app.sign_out_urls || '[]');
  return Array.isArray(parsed) ? parsed.filter((url): url is string => typeof url === 'string') : [];
}

/** Where an application may send people back: its callback URL, or a self-registered client's list. */
export function redirectUrisOf(app: Pick<AppRow, 'callback_url' | 'redirect_uris'>): string[] {
  const parsed: unknown = app.redirect_uris ? JSON.parse(app.redirect_uris) : undefined;
  return Array.isArray(parsed) && parsed.length ? parsed.filter((url): url is string => typeof url === 'string') : [app.callback_url];
}

/** A list of sign-out redirect URLs as the column stores it. */
export function storedSignOutUrls(urls: readonly string[]): string {
  return JSON.stringify(urls);
}

export interface SecretRow {
  id: number;
  app_id: number;
  digest: string;
  last_four: string;
  created_at: string | Date;
  last_used_at: string | Date | null;
}

export function findAppByClientId(db: Knex, clientId: string): Promise<AppRow | undefined> {
  return db('oauth_apps').where({ client_id: clientId }).first();
}

/** An application with its group's name, in one query: what the sign-in and consent pages show. */
export async function findAppWithGroupName(db: Knex, clientId: string): Promise<{ app: AppRow; groupName: string } | undefined> {
  const row = await db('oauth_apps as a').join('groups as g', 'g.id', 'a.group_id').where('a.client_id', clientId).first('a.*', 'g.name as group_name');
  if (!row) return undefined;
  const { group_name: groupName, ...app } = row as AppRow & { group_name: string };
  return { app, groupName };
}

/**
 * Whether an OAuth token may still act: its application exists and its user exists and is not
 * disabled. One round trip, as it runs on every API call made with an OAuth token.
 */
export async function oauthPartiesActive(db: Knex, clientId: string, userId: number): Promise<boolean> {
  const activeUser = db('users').where({ id: userId }).whereNull('disabled_at').select(db.raw('1'));
  return (await db('oauth_apps').where({ client_id: clientId }).whereExists(activeUser).first(db.raw('1 as found'))) !== undefined;
}

/**
 * The group of an application that may still act as itself (it exists and still allows the
 * client credentials grant), or undefined: checked on every API call made with such a token.
 */
export async function groupOfActingApplication(db: Knex, clientId: string): Promise<number | undefined> {
  const row = await db('oauth_apps').where({ client_id: clientId, allow_client_credentials: true }).first('group_id');
  return row ? Number((row as { group_id: number }).group_id) : undefined;
}

/** The client and its secrets' digests in one round trip: what the token endpoint authenticates against. */
export async function findClientWithSecrets(
  db: Knex,
  clientId: string,
): Promise<{ app: AppRow; secrets: Array<Pick<SecretRow, 'id' | 'digest'>> } | undefined> {
  const rows = await db('oauth_apps as a')
    .leftJoin('oauth_app_secrets as s', 's.app_id', 'a.id')
    .where('a.client_id', clientId)
    .select('a.*', 's.id as secret_id', 's.digest as secret_digest');
  if (!rows.length) return undefined;
  const { secret_id: _id, secret_digest: _digest, ...app } = rows[0];
  const secrets = rows
    .filter((r) => r.secret_id !== null)
    .map((r) => ({ id: Number(r.secret_id), digest: String(r.secret_digest) }));
  return { app: app as AppRow, secrets };
}

export function listSecrets(db: Knex, appId: number): Promise<SecretRow[]> {
  return db('oauth_app_secrets').where({ app_id: appId }).orderBy('id', 'asc');
}

export async function insertApp(
  db: Knex,
  app: Omit<AppRow, 'id' | 'created_at' | 'updated_at'> & { created_by: number | null; at: string },
): Promise<AppRow> {
  const { at, ...fields } = app;
  const [row] = await db('oauth_apps').insert({ ...fields, created_at: at, updated_at: at }).returning('*');
  return row as AppRow;
}

export async function updateApp(
  db: Knex,
  id: number,
  fields: Pick<AppRow, 'name' | 'homepage_url' | 'description' | 'callback_url' | 'sign_out_urls' | 'device_flow' | 'require_pushed_authorization_requests'>
    & Partial<Pick<AppRow, 'backchannel_logout_uri'>>
    & Partial<Pick<AppRow, 'allow_client_credentials'>>
    & { at: string },
): Promise<void> {
  const { at, ...rest } = fields;
  await db('oauth_apps').where({ id }).update({ ...rest, updated_at: at });
}

export async function deleteApp(db: Knex, id: number): Promise<void> {
  await db('oauth_apps').where({ id }).delete();
}

export async function insertSecret(
  db: Knex,
  secret: { appId: number; digest: string; lastFour: string; at: string },
): Promise<SecretRow> {
  const [row] = await db('oauth_app_secrets')
    .insert({ app_id: secret.appId, digest: secret.digest, last_four: secret.lastFour, created_at: secret.at })
    .returning('*');
  return row as SecretRow;
}

/** Deletes one secret of an application; its last four characters (for the audit trail), or undefined when there was none. */
export async function deleteSecret(db: Knex, appId: number, secretId: number): Promise<string | undefined> {
  const row = await db('oauth_app_secrets').where({ app_id: appId, id: secretId }).first('last_four');
  if (!row) return undefined;
  const deleted = await db('oauth_app_secrets').where({ app_id: appId, id: secretId }).delete();
  return deleted ? (row as { last_four: string }).last_four : undefined;
}

export async function countSecrets(db: Knex, appId: number): Promise<number> {
  const row = await db('oauth_app_secrets').where({ app_id: appId }).count({ n: '*' }).first();
  return Number((row as { n: number | string } | undefined)?.n ?? 0);
}

export async function touchSecret(db: Knex, secretId: number, at: string): Promise<void> {
  await db('oauth_app_secrets').where({ id: secretId }).update({ last_used_at: at });
}

export async function pageAppsOfGroup(
  db: Knex,
  groupId: number,
  page: { limit: number; offset: number },
): Promise<{ total: number; items: AppRow[] }> {
  const [items, count] = await Promise.all([
    db('oauth_apps').where({ group_id: groupId }).orderBy('id', 'asc').limit(page.limit).offset(page.offset),
    db('oauth_apps').where({ group_id: groupId }).count({ n: '*' }).first(),
  ]);
  return { total: Number((count as { n: number | string } | undefined)?.n ?? 0), items };
}

/** Locks an application's row until the transaction ends, so counts made after it stay true. */
export async function lockApp(trx: Knex.Transaction, id: number): Promise<void> {
  await trx('oauth_apps').where({ id }).forUpdate().first('id');
}

/** The client_ids of a group's applications. */
export async function clientIdsOfGroup(db: Knex, groupId: number): Promise<string[]> {
  return (await db('oauth_apps').where({ group_id: groupId }).select('client_id')).map((r: { client_id: string }) => r.client_id);
}

export async function countAppsOfGroup(db: Knex, groupId: number): Promise<number> {
  const row = await db('oauth_apps').where({ group_id: groupId }).count({ n: '*' }).first();
  return Number((row as { n: number | string } | undefined)?.n ?? 0);
}

/** The client secrets among `digests` (digests of their values), with their applications' client ids and groups, in one query. */
export function findSecretsByDigests(db: Knex, digests: string[]): Promise<Array<{ id: number; app_id: number; last_four: string; client_id: string; group_id: number }>> {
  if (!digests.length) return Promise.resolve([]);
  return db('oauth_app_secrets as s')
    .join('oauth_apps as a', 'a.id', 's.app_id')
    .whereIn('s.digest', digests)
    .orderBy('s.id')
    .select('s.id', 's.app_id', 's.last_four', 'a.client_id', 'a.group_id');
}

