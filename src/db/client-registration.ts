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
