import { AsyncLocalStorage } from 'node:async_hooks';
import type { Knex } from 'knex';
import { recordAudit } from '../../db/audit.js';
import { findDynamicClient, insertRegisteredClient, updateDynamicClient } from '../../db/client-registration.js';
import { deleteApp } from '../../db/apps.js';
import { grantIdsOfClient } from '../../db/grants.js';
import { now } from '../../time.js';
import { changing } from '../change-versions.js';
import { redirectUriProblem } from './redirect-uris.js';

/**
 * Dynamic Client Registration (RFC 7591) and its management (RFC 7592), as the library runs
 * them at /login/oauth/register, kept in the oauth_apps table: a registered client is a public
 * application of the group the administrator chose, marked as registered from the address that
 * sent it. The library validates the metadata and keeps the registration access token; these are
 * the steps where the service's rules meet it.
 */

/** Who is registering, set around the library's handling of the request (the adapter has no request). */
export interface Registering {
  ip: string;
  groupId: number;
}
export const registering = new AsyncLocalStorage<Registering>();

/** What the service keeps of a client's metadata; the rest is not stored. */
export const KEPT_METADATA = ['redirect_uris', 'client_name', 'client_uri', 'token_endpoint_auth_method', 'grant_types', 'response_types', 'application_type', 'software_id', 'software_version'] as const;

/** The problem with a client's metadata as the service takes it, in words, or undefined. */
export function registrationProblem(metadata: Record<string, unknown>): { field: string; message: string } | undefined {
  if (metadata.token_endpoint_auth_method !== 'none') {
    return { field: 'token_endpoint_auth_method', message: 'token_endpoint_auth_method must be none: clients register here as public clients, which use PKCE (S256)' };
  }
  const uris = metadata.redirect_uris;
  if (!Array.isArray(uris) || uris.length === 0 || uris.length > 10) return { field: 'redirect_uris', message: 'redirect_uris must list 1 to 10 URIs' };
  for (const uri of uris) {
    const problem = typeof uri === 'string' ? redirectUriProblem(uri) : 'is not a string';
    if (problem) return { field: 'redirect_uris', message: `redirect_uris: ${String(uri).slice(0, 100)} ${problem}` };
  }
  if (metadata.client_name !== undefined && (typeof metadata.client_name !== 'string' || metadata.client_name.trim().length === 0 || metadata.client_name.length > 100)) {
    return { field: 'client_name', message: 'client_name must be 1 to 100 characters' };
  }
  return undefined;
}

/** Whether a client's redirect URIs are all a native app's (no https): the library then applies its rules for native clients. */
export function nativeRedirects(uris: readonly string[]): boolean {
  return uris.every((uri) => !uri.startsWith('https:'));
}

function fieldsOf(metadata: Record<string, unknown>) {
  const redirectUris = [...new Set(metadata.redirect_uris as string[])];
  const clientUri = typeof metadata.client_uri === 'string' && URL.parse(metadata.client_uri)?.protocol === 'https:' ? metadata.client_uri : undefined;
  const first = new URL(redirectUris[0]!);
  const name = typeof metadata.client_name === 'string' ? metadata.client_name.trim() : first.host || first.protocol.replace(/:$/, '');
  return { name, homepageUrl: clientUri ?? (first.protocol.startsWith('http') ? first.origin : 'https://invalid.example'), redirectUris };
}

/** Keeps a registration (RFC 7591) or its update (RFC 7592) as the client's oauth_apps row. */
export async function storeDynamicClient(db: Knex, clientId: string, metadata: Record<string, unknown>): Promise<void> {
  const fields = fieldsOf(metadata);
  const at = now();
  const who = registering.getStore();
  if (who) {
    await db.transaction(async (trx) => {
      await insertRegisteredClient(trx, { clientId, groupId: who.groupId, ...fields, registeredBy: 'dynamic', registeredFrom: who.ip, metadataExpiresAt: null }, at);
      await recordAudit(trx, { groupId: who.groupId, actorId: null, action: 'app.create', target: clientId, details: { name: fields.name, type: 'public', registeredBy: 'dynamic' }, ip: who.ip }, at);
    });
    return;
  }
  await changing(db, [`app:${clientId}`], () => updateDynamicClient(db, clientId, fields, at));
}

/**
 * Deletes a dynamically registered client (RFC 7592 DELETE, with its registration access token):
 * its row, and every grant given to it. Returns the grants to revoke in the library's storage.
 */
export async function deleteDynamicClient(db: Knex, clientId: string, ip: string | null): Promise<string[]> {
  const row = await findDynamicClient(db, clientId);
  if (!row) return [];
  const grantIds = await grantIdsOfClient(db, clientId);
  await changing(db, [`app:${clientId}`], () => db.transaction(async (trx) => {
    await deleteApp(trx, row.id);
    await recordAudit(trx, { groupId: row.group_id, actorId: null, action: 'app.delete', target: clientId, details: { name: row.name, registeredBy: 'dynamic' }, ip }, now());
  }));
  return grantIds;
}
