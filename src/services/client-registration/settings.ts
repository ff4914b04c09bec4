import type { Knex } from 'knex';
import { z } from 'zod';
import { recordAudit } from '../../db/audit.js';
import { readClientRegistration, writeClientRegistration } from '../../db/client-registration.js';
import { findGroupByPath } from '../../db/groups.js';
import { ValidationError } from '../../errors.js';
import { now } from '../../time.js';
import { auditActorId, type Actor } from '../context.js';
import * as rules from '../rules.js';

/**
 * Whether clients may register themselves, and where they go. Both ways are off until a site
 * administrator turns them on (Admin → Client registration) and chooses the group that owns such
 * clients: its owners see them among the group's applications, marked as registered automatically,
 * and may delete them.
 */
export interface ClientRegistrationSettings {
  /** A client_id that is an https URL is fetched as a Client ID Metadata Document. */
  metadataDocuments: boolean;
  /** POST /login/oauth/register (RFC 7591) registers a public client. */
  dynamicRegistration: boolean;
  /** The group such clients belong to; null when none is chosen, or it was deleted. */
  group: { id: number; path: string; name: string } | null;
}

const OFF: ClientRegistrationSettings = { metadataDocuments: false, dynamicRegistration: false, group: null };

export async function clientRegistrationSettings(db: Knex): Promise<ClientRegistrationSettings> {
  const row = await readClientRegistration(db);
  if (!row) return OFF;
  const group = row.group_id !== null && row.group_path !== null ? { id: Number(row.group_id), path: row.group_path, name: row.group_name ?? row.group_path } : null;
  // Without a group there is nowhere to put a client: both ways count as off.
  if (!group) return { ...OFF };
  return { metadataDocuments: Boolean(row.metadata_documents), dynamicRegistration: Boolean(row.dynamic_registration), group };
}

/** The group a way of registering puts its clients in, when that way is on. */
export async function registrationGroup(db: Knex, way: 'metadataDocuments' | 'dynamicRegistration'): Promise<ClientRegistrationSettings['group']> {
  const settings = await clientRegistrationSettings(db);
  return settings[way] ? settings.group : null;
}

const onOff = (field: string) => z.boolean({ error: `${field} must be true or false` });

export const clientRegistrationInput = z.strictObject({
  metadataDocuments: onOff('metadataDocuments').describe('Accept Client ID Metadata Documents: a client_id that is an https URL is fetched and used as a public client'),
  dynamicRegistration: onOff('dynamicRegistration').describe('Accept Dynamic Client Registration (RFC 7591) of public clients at /login/oauth/register'),
  group: z.string({ error: 'group must be the path of a group' }).trim().max(100, 'group must be at most 100 characters').default('').describe('The path of the group such clients belong to; required while either is on'),
});

/** Sets the switches (a site administrator's act, recorded in the site's audit log). */
export async function setClientRegistration(db: Knex, actor: Actor, input: unknown): Promise<ClientRegistrationSettings> {
  const fields = rules.parse(clientRegistrationInput, input);
  const group = fields.group ? await findGroupByPath(db, fields.group) : undefined;
  if (fields.group && !group) throw new ValidationError('group', 'group must be the path of an existing group');
  if ((fields.metadataDocuments || fields.dynamicRegistration) && !group) {
    throw new ValidationError('group', 'group is required while client registration is on: it owns the clients that register');
  }
  const at = now();
  await db.transaction(async (trx) => {
    await writeClientRegistration(trx, { metadataDocuments: fields.metadataDocuments, dynamicRegistration: fields.dynamicRegistration, groupId: group?.id ?? null }, at);
    await recordAudit(trx, {
      groupId: null,
      actorId: auditActorId(actor),
      action: 'client_registration.update',
      target: group?.path ?? '',
      details: { metadataDocuments: fields.metadataDocuments, dynamicRegistration: fields.dynamicRegistration, ...(actor.admin ? { via: 'cli' } : {}) },
      ip: actor.ip,
    }, at);
  });
  return clientRegistrationSettings(db);
}
