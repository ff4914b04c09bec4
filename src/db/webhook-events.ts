import type { Knex } from 'knex';
import type { WebhookEvent } from '../vocabulary.js';
import { enqueueDeliveries } from './webhooks.js';

/** A change of a group as its audit row records it: what the event's body is made of. */
export interface GroupChange {
  actorId: number | null;
  /** The application that acted as itself (client credentials), when no user did. */
  actorClientId?: string | null;
  action: string;
  target: string;
  details?: Record<string, unknown>;
}

/**
 * Writes the deliveries of `event` about group `groupId` to its webhooks that listen, in the
 * caller's transaction (the same one as the change and its audit row).
 */
export function tellWebhooks(db: Knex, groupId: number, event: WebhookEvent, change: GroupChange, at: string): Promise<number> {
  return enqueueDeliveries(db, groupId, event, () => eventBody(db, groupId, event, change, at), at);
}

/**
 * A delivery's JSON body: the event, when it happened, the group, who acted (a user, an
 * application acting as itself, or null for the service itself and the administrators' CLI),
 * and the event's own data.
 */
async function eventBody(db: Knex, groupId: number, event: WebhookEvent, change: GroupChange, at: string): Promise<Record<string, unknown>> {
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
function eventData({ action, target, details = {} }: GroupChange): Record<string, unknown> {
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
