import type { Knex } from 'knex';
import type { WebhookEvent } from '../vocabulary.js';
import type { AuditAction, AuditEvent } from './audit.js';
import { enqueueDeliveries } from './webhooks.js';

/**
 * The webhook event each audited change of a group is told as. Changes not named here (tokens
 * of an application ended by its owners, say) are in the group's audit log only.
 */
export const WEBHOOK_EVENT_OF_AUDIT: Partial<Record<AuditAction, WebhookEvent>> = {
  'member.add': 'member.added',
  'member.remove': 'member.removed',
  'member.leave': 'member.removed',
  'member.role': 'member.role_changed',
  'app.create': 'application.created',
  'app.update': 'application.updated',
  'app.delete': 'application.deleted',
  'app.secret.create': 'client_secret.created',
  'app.secret.revoke': 'client_secret.revoked',
  'group.update': 'group.updated',
  'group.delete': 'group.deleted',
  'app.secret.report.revoke': 'credentials.revoked',
  'app.token.report.revoke': 'credentials.revoked',
};

/**
 * Writes the deliveries of `event` about group `groupId` to its webhooks that listen, in the
 * caller's transaction (the same one as the change and its audit row).
 */
export function tellWebhooks(db: Knex, groupId: number, event: WebhookEvent, change: AuditEvent, at: string): Promise<number> {
  return enqueueDeliveries(db, groupId, event, () => eventBody(db, groupId, event, change, at), at);
}

/**
 * A delivery's JSON body: the event, when it happened, the group, who acted (a user, an
 * application acting as itself, or null for the service itself and the administrators' CLI),
 * and the event's own data.
 */
async function eventBody(db: Knex, groupId: number, event: WebhookEvent, change: AuditEvent, at: string): Promise<Record<string, unknown>> {
  const group = (await db('groups').where({ id: groupId }).first('id', 'path', 'name')) as { id: number; path: string; name: string } | undefined;
  const user = change.actorId ? ((await db('users').where({ id: change.actorId }).first('id', 'username')) as { id: number; username: string } | undefined) : undefined;
  const actor = user
    ? { type: 'user', id: Number(user.id), username: user.username }
    : change.actorClientId
      ? { type: 'application', client_id: change.actorClientId }
      : null;
  return {
    event,
    occurred_at: at,
    group: group ? { id: Number(group.id), path: group.path, name: group.name } : { id: groupId },
    actor,
    data: eventData(change),
  };
}

type Details = Record<string, unknown>;

/** What each event says of its subject, from the audit row's target and details. */
function eventData({ action, target, details = {} }: AuditEvent): Record<string, unknown> {
  const d = details as Details;
  switch (action) {
    case 'member.add':
      return { member: { username: target }, role: d.role };
    case 'member.role':
      return { member: { username: target }, role: d.to, previous_role: d.from };
    case 'member.remove':
    case 'member.leave':
      return { member: { username: target }, previous_role: d.from, reason: action === 'member.leave' ? 'left' : d.reason === 'account deleted' ? 'account_deleted' : 'removed' };
    case 'app.create':
      return { application: { client_id: target, name: d.name, type: d.type } };
    case 'app.update':
      return { application: { client_id: target }, changes: d.changes, ...(d.authorizationsEnded === undefined ? {} : { authorizations_ended: d.authorizationsEnded }) };
    case 'app.delete':
      return { application: { client_id: target, name: d.name } };
    case 'app.secret.create':
    case 'app.secret.revoke':
      return { application: { client_id: target }, secret: { last_four: d.lastFour } };
    case 'group.update':
      return { changes: d.changes };
    case 'group.delete':
      return { applications: d.applications, members: d.members };
    case 'app.secret.report.revoke':
      return { application: { client_id: target }, credential: 'client_secret', secret: { last_four: d.lastFour }, reason: 'reported_leaked' };
    case 'app.token.report.revoke':
      return { application: { client_id: target }, credential: d.token, ...(d.user === undefined ? {} : { user: { username: d.user } }), reason: 'reported_leaked' };
    default:
      return { target, details: d };
  }
}
