import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { recordAudit } from '../../db/audit.js';
import { lockGroup } from '../../db/groups.js';
import { isUniqueViolation } from '../../db/knex.js';
import * as store from '../../db/resources.js';
import { RESOURCE_CLIENT_PREFIX, type Resource, type ResourceScope } from '../../db/resources.js';
import { ConflictError, NotFoundError, ValidationError } from '../../errors.js';
import { now } from '../../time.js';
import { digest, generateToken } from '../../tokens.js';
import { changing } from '../change-versions.js';
import { auditActor, changedFields } from '../context.js';
import { requireGroupAction, type GroupAccess } from '../groups.js';
import * as rules from '../rules.js';
import { claimSubmission, completeSubmission, type SubmissionKey } from '../submissions.js';
import { newResource, resourceChanges } from './rules.js';

export type { Resource, ResourceScope } from '../../db/resources.js';


/** What managing resources needs: the database, and the issuer, whose own addresses no resource may claim. */
export interface ResourceDeps {
  db: Knex;
  issuer: string;
}

/** As many as webhooks: a group with more APIs than this is better served by one resource with more scopes. */
export const MAX_RESOURCES_PER_GROUP = 20;

export function resourceOf(row: store.ResourceRow): Resource {
  return {
    id: Number(row.id),
    groupId: Number(row.group_id),
    identifier: row.identifier,
    name: row.name,
    scopes: JSON.parse(row.scopes) as ResourceScope[],
    tokenFormat: row.token_format,
    clientId: row.client_id,
    secretLastFour: row.secret_last_four,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** A fresh introspection secret: shown once, kept as its digest. */
function newSecret(): { secret: string; secretDigest: string; secretLastFour: string } {
  const secret = generateToken('hs_');
  return { secret, secretDigest: digest(secret), secretLastFour: secret.slice(-4) };
}

/** The service's own addresses are its own: a resource there would take tokens meant for its API. */
function requireElsewhere(deps: ResourceDeps, identifier: string): void {
  if (new URL(identifier).origin === new URL(deps.issuer).origin) {
    throw new ValidationError('identifier', 'identifier must not be an address of this service: its API is a resource of its own');
  }
}

function identifierTaken(err: unknown): never {
  if (isUniqueViolation(err)) throw new ConflictError('identifier', 'identifier is already registered on this site: a resource indicator names one resource');
  throw err;
}

export async function resourcesOf(db: Knex, access: GroupAccess): Promise<Resource[]> {
  requireGroupAction(access, 'manage-resources');
  return (await store.listResources(db, access.group.id)).map(resourceOf);
}

/** A resource of the group (owners only); another group's is as unknown as none. */
export async function resourceOfGroup(db: Knex, access: GroupAccess, id: number): Promise<Resource> {
  requireGroupAction(access, 'manage-resources');
  const row = Number.isSafeInteger(id) ? await store.findResource(db, access.group.id, id) : undefined;
  if (!row) throw new NotFoundError('no such resource in this group');
  return resourceOf(row);
}

/**
 * Registers a resource, with the introspection secret its server will use (returned once). With
 * the one-time key of the form that sent it (services/submissions.ts), a repeated submission adds
 * nothing (RepeatedSubmission).
 */
export async function createResource(deps: ResourceDeps, access: GroupAccess, input: unknown, submission?: SubmissionKey): Promise<{ resource: Resource; secret: string }> {
  requireGroupAction(access, 'manage-resources');
  const fields = rules.parse(newResource, input);
  requireElsewhere(deps, fields.identifier);
  const { actor, group } = access;
  const credentials = newSecret();
  const clientId = `${RESOURCE_CLIENT_PREFIX}${randomBytes(10).toString('hex')}`;
  const row = await deps.db
    .transaction(async (trx) => {
      await claimSubmission(trx, submission);
      // The group's row is locked while its resources are counted, so parallel additions at the limit wait for each other.
      await lockGroup(trx, group.id);
      if ((await store.countResources(trx, group.id)) >= MAX_RESOURCES_PER_GROUP) {
        throw new ConflictError('identifier', `a group can have at most ${MAX_RESOURCES_PER_GROUP} resources`);
      }
      const at = now();
      const created = await store.insertResource(trx, group.id, { ...fields, clientId, ...credentials }, at);
      await recordAudit(trx, { groupId: group.id, ...auditActor(actor), action: 'resource.create', target: fields.identifier, details: { scopes: fields.scopes.map((s) => s.name), tokenFormat: fields.tokenFormat }, ip: actor.ip }, at);
      await completeSubmission(trx, submission, created.id);
      return created;
    })
    .catch(identifierTaken);
  return { resource: resourceOf(row), secret: credentials.secret };
}

export async function updateResource(deps: ResourceDeps, access: GroupAccess, id: number, input: unknown): Promise<Resource> {
  const before = await resourceOfGroup(deps.db, access, id);
  const fields = rules.parse(resourceChanges, input);
  const after = {
    identifier: fields.identifier ?? before.identifier,
    name: fields.name ?? before.name,
    scopes: fields.scopes ?? before.scopes,
    tokenFormat: fields.tokenFormat ?? before.tokenFormat,
  };
  if (after.identifier !== before.identifier) requireElsewhere(deps, after.identifier);
  const changes = changedFields(
    { identifier: before.identifier, name: before.name, scopes: before.scopes.map((s) => `${s.name}: ${s.description}`).join('\n'), tokenFormat: before.tokenFormat },
    { identifier: after.identifier, name: after.name, scopes: after.scopes.map((s) => `${s.name}: ${s.description}`).join('\n'), tokenFormat: after.tokenFormat },
  );
  if (!Object.keys(changes).length) return before;
  const { actor, group } = access;
  const at = now();
  await deps.db
    .transaction(async (trx) => {
      if (!(await store.updateResource(trx, group.id, id, after, at))) throw new NotFoundError('no such resource in this group');
      await recordAudit(trx, { groupId: group.id, ...auditActor(actor), action: 'resource.update', target: after.identifier, details: { changes }, ip: actor.ip }, at);
    })
    .catch(identifierTaken);
  return { ...before, ...after, updatedAt: at };
}

/**
 * Replaces the resource's introspection secret (returned once); the old one stops working at once,
 * on every instance.
 */
export async function regenerateResourceSecret(deps: ResourceDeps, access: GroupAccess, id: number): Promise<{ resource: Resource; secret: string }> {
  const before = await resourceOfGroup(deps.db, access, id);
  const { actor, group } = access;
  const credentials = newSecret();
  const at = now();
  await changing(deps.db, [`app:${before.clientId}`], () =>
    deps.db.transaction(async (trx) => {
      if (!(await store.updateResource(trx, group.id, id, credentials, at))) throw new NotFoundError('no such resource in this group');
      await recordAudit(trx, { groupId: group.id, ...auditActor(actor), action: 'resource.secret.regenerate', target: before.identifier, details: { lastFour: credentials.secretLastFour }, ip: actor.ip }, at);
    }),
  );
  return { resource: { ...before, secretLastFour: credentials.secretLastFour, updatedAt: at }, secret: credentials.secret };
}

/**
 * Deletes a resource: clients can no longer ask for it (`invalid_target`), and its server can no
 * longer introspect. JWT access tokens already issued for it stay valid signatures until they expire.
 */
export async function deleteResource(db: Knex, access: GroupAccess, id: number): Promise<void> {
  const resource = await resourceOfGroup(db, access, id);
  const { actor, group } = access;
  await changing(db, [`app:${resource.clientId}`], () =>
    db.transaction(async (trx) => {
      const at = now();
      if (!(await store.deleteResource(trx, group.id, id))) throw new NotFoundError('no such resource in this group');
      await recordAudit(trx, { groupId: group.id, ...auditActor(actor), action: 'resource.delete', target: resource.identifier, details: {}, ip: actor.ip }, at);
    }),
  );
}
