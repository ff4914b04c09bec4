import type { Knex } from 'knex';

export interface ClientRegistrationRow {
  id: number;
  metadata_documents: boolean | number;
  dynamic_registration: boolean | number;
  group_id: number | null;
  updated_at: string | Date;
}

/** The switches, with the chosen group's path and name when it still exists; undefined when never set. */
export function readClientRegistration(db: Knex): Promise<(ClientRegistrationRow & { group_path: string | null; group_name: string | null }) | undefined> {
  return db('client_registration as c').leftJoin('groups as g', 'g.id', 'c.group_id').where('c.id', 1).first('c.*', 'g.path as group_path', 'g.name as group_name');
}

export async function writeClientRegistration(db: Knex, fields: { metadataDocuments: boolean; dynamicRegistration: boolean; groupId: number | null }, at: string): Promise<void> {
  const row = { id: 1, metadata_documents: fields.metadataDocuments, dynamic_registration: fields.dynamicRegistration, group_id: fields.groupId, updated_at: at };
  await db('client_registration').insert(row).onConflict('id').merge();
}

/** What a self-registered client's row holds (the rest takes the columns' defaults). */
export interface RegisteredClientFields {
  clientId: string;
  groupId: number;
  name: string;
  homepageUrl: string;
  redirectUris: string[];
  registeredBy: 'metadata_document' | 'dynamic';
  registeredFrom: string;
  metadataExpiresAt: string | null;
}

/** The row of a client that registered with a metadata document, as much as refreshing it needs. */
export function findMetadataClient(db: Knex, clientId: string): Promise<{ id: number; metadata_expires_at: string | Date | null; registered_by: string | null } | undefined> {
  return db('oauth_apps').where({ client_id: clientId }).first('id', 'metadata_expires_at', 'registered_by');
}

export async function insertRegisteredClient(db: Knex, fields: RegisteredClientFields, at: string): Promise<number> {
  const [inserted] = await db('oauth_apps')
    .insert({
      client_id: fields.clientId,
      group_id: fields.groupId,
      name: fields.name,
      homepage_url: fields.homepageUrl,
      description: '',
      callback_url: fields.redirectUris[0],
      redirect_uris: JSON.stringify(fields.redirectUris),
      client_type: 'public',
      registered_by: fields.registeredBy,
      registered_from: fields.registeredFrom,
      metadata_expires_at: fields.metadataExpiresAt,
      created_by: null,
      created_at: at,
      updated_at: at,
    })
    .returning('id');
  return Number(typeof inserted === 'object' ? (inserted as { id: number }).id : inserted);
}

/** A metadata document fetched again: what it says now, and when to fetch it next. */
export async function refreshMetadataClient(db: Knex, clientId: string, fields: Pick<RegisteredClientFields, 'name' | 'homepageUrl' | 'redirectUris' | 'metadataExpiresAt'>, at: string): Promise<void> {
  await db('oauth_apps').where({ client_id: clientId, registered_by: 'metadata_document' }).update({
    name: fields.name,
    homepage_url: fields.homepageUrl,
    callback_url: fields.redirectUris[0],
    redirect_uris: JSON.stringify(fields.redirectUris),
    metadata_expires_at: fields.metadataExpiresAt,
    updated_at: at,
  });
}

/** A dynamically registered client's update (RFC 7592): what its metadata says now. */
export async function updateDynamicClient(db: Knex, clientId: string, fields: Pick<RegisteredClientFields, 'name' | 'homepageUrl' | 'redirectUris'>, at: string): Promise<boolean> {
  const changed = await db('oauth_apps').where({ client_id: clientId, registered_by: 'dynamic' }).update({
    name: fields.name,
    homepage_url: fields.homepageUrl,
    callback_url: fields.redirectUris[0],
    redirect_uris: JSON.stringify(fields.redirectUris),
    updated_at: at,
  });
  return changed > 0;
}

/** The row of a dynamically registered client (RFC 7592 delete); undefined for any other. */
export function findDynamicClient(db: Knex, clientId: string): Promise<{ id: number; group_id: number; name: string } | undefined> {
  return db('oauth_apps').where({ client_id: clientId, registered_by: 'dynamic' }).first('id', 'group_id', 'name');
}
