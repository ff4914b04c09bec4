import type { Knex } from 'knex';
import type { WebhookEvent } from '../vocabulary.js';
import { tellWebhooks } from './webhook-events.js';

/**
 * Every action an audit row can record: a row's `action` is one of these, and the audit logs
 * show each in words (presenters/audit.ts).
 */
export const AUDIT_ACTIONS = [
  'group.create', 'group.update', 'group.delete',
  'member.add', 'member.role', 'member.remove', 'member.leave',
  'app.create', 'app.update', 'app.delete', 'app.secret.create', 'app.secret.revoke', 'app.tokens.revoke',
  'app.secret.report.revoke', 'app.token.report.revoke', 'token.report.revoke',
  'webhook.create', 'webhook.update', 'webhook.delete',
  'resource.create', 'resource.update', 'resource.delete', 'resource.secret.regenerate',
  'user.admin.grant', 'user.admin.revoke', 'user.disable', 'user.enable', 'user.password_reset.send',
  'user.two_factor.enable', 'user.two_factor.disable', 'user.two_factor.recovery_codes', 'user.two_factor.reset',
  'user.passkey.add', 'user.passkey.remove', 'user.recovery.clear', 'user.password.set',
  'user.identity.link', 'user.identity.unlink',
  'client_registration.update',
  'sign-in_provider.add', 'sign-in_provider.update', 'sign-in_provider.disable', 'sign-in_provider.enable', 'sign-in_provider.remove',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

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
  // Told by deleteGroup before the group goes (its audit row is then the site's, with no group).
  'group.delete': 'group.deleted',
  'app.secret.report.revoke': 'credentials.revoked',
  'app.token.report.revoke': 'credentials.revoked',
};

export interface AuditEvent {
  groupId: number | null;
  /** An event of a user's own account, shown to them (with no group). */
  userId?: number | null;
  actorId: number | null;
  /** The application that acted as itself (client credentials), when no user did. */
  actorClientId?: string | null;
  action: AuditAction;
  target: string;
  details?: Record<string, unknown>;
  ip: string | null;
}

export interface AuditRow {
  id: number;
  action: string;
  target: string;
  details: string;
  ip: string | null;
  created_at: string | Date;
  actor_username: string | null;
  /** The actor deleted their account since (actor_username is then null). */
  actor_deleted: boolean | number;
  /** The application that acted as itself, and its name while it exists (see `listAudit`). */
  actor_client_id?: string | null;
  actor_app_name?: string | null;
}

/**
 * Written in the same transaction as the change it records: no change without its trace. A
 * change of a group that its webhooks can be told of is queued for them in that transaction too.
 */
export async function recordAudit(db: Knex, event: AuditEvent, at: string): Promise<void> {
  await db('audit_events').insert({
    group_id: event.groupId,
    user_id: event.userId ?? null,
    actor_id: event.actorId,
    ...(event.actorClientId ? { actor_client_id: event.actorClientId } : {}),
    action: event.action,
    target: event.target,
    details: JSON.stringify(event.details ?? {}),
    // The column holds 64 characters; an address is at most 45 (IPv6 with an IPv4 tail).
    ip: event.ip === null ? null : event.ip.slice(0, 64),
    created_at: at,
  });
  const told = event.groupId === null ? undefined : WEBHOOK_EVENT_OF_AUDIT[event.action];
  if (told) await tellWebhooks(db, event.groupId!, told, event, at);
}

export function listAudit(db: Knex, groupId: number, limit = 200): Promise<AuditRow[]> {
  return db('audit_events as a')
    .leftJoin('users as u', 'u.id', 'a.actor_id')
    .leftJoin('oauth_apps as actor_app', 'actor_app.client_id', 'a.actor_client_id')
    .where('a.group_id', groupId)
    .select('a.id', 'a.action', 'a.target', 'a.details', 'a.ip', 'a.created_at', 'a.actor_deleted', 'u.username as actor_username', 'a.actor_client_id', 'actor_app.name as actor_app_name')
    .orderBy('a.id', 'desc')
    .limit(limit);
}

/** The latest events of a user's own account with one of `actions`, newest first. */
export function listUserAudit(db: Knex, userId: number, actions: readonly AuditAction[], limit = 20): Promise<AuditRow[]> {
  return db('audit_events as a')
    .leftJoin('users as u', 'u.id', 'a.actor_id')
    .where('a.user_id', userId)
    .whereIn('a.action', actions)
    .select('a.id', 'a.action', 'a.target', 'a.details', 'a.ip', 'a.created_at', 'a.actor_deleted', 'u.username as actor_username')
    .orderBy('a.id', 'desc')
    .limit(limit);
}

/** Whose log: one group's, or the site's own (events of no group and no user's account). */
export type AuditLog = { groupId: number } | 'site';

/** A filter of a log: one action, and a time range (`since` ≤ time < `until`, ISO strings). */
export interface AuditFilter {
  action?: string;
  since?: string;
  until?: string;
}

function filteredAudit(db: Knex, log: AuditLog, filter: AuditFilter) {
  const q = db('audit_events as a');
  if (log === 'site') q.whereNull('a.group_id').whereNull('a.user_id');
  else q.where('a.group_id', log.groupId);
  if (filter.action !== undefined) q.where('a.action', filter.action);
  if (filter.since !== undefined) q.where('a.created_at', '>=', filter.since);
  if (filter.until !== undefined) q.where('a.created_at', '<', filter.until);
  return q;
}

const EVENT_COLUMNS = [
  'a.id', 'a.action', 'a.target', 'a.details', 'a.ip', 'a.created_at', 'a.actor_deleted', 'u.username as actor_username',
  'a.actor_client_id',
];

/** A page of a log's events matching `filter`, newest first, with the total. */
export async function listAuditEvents(
  db: Knex,
  log: AuditLog,
  filter: AuditFilter,
  page: { limit: number; offset: number },
): Promise<{ total: number; items: AuditRow[] }> {
  const [counted, items] = await Promise.all([
    filteredAudit(db, log, filter).count({ n: '*' }).first(),
    filteredAudit(db, log, filter)
      .leftJoin('users as u', 'u.id', 'a.actor_id')
      .select(EVENT_COLUMNS)
      .orderBy('a.id', 'desc')
      .limit(page.limit)
      .offset(page.offset),
  ]);
  return { total: Number((counted as { n: number | string } | undefined)?.n ?? 0), items: items as AuditRow[] };
}

/**
 * Every event of a log matching `filter`, newest first, read `batchSize` rows at a time by id
 * (each batch starts below the last id seen), so a long log is never held in memory at once and
 * rows written meanwhile neither repeat nor shift a batch.
 */
export async function* auditEventBatches(db: Knex, log: AuditLog, filter: AuditFilter, batchSize = 500): AsyncGenerator<AuditRow[]> {
  let below: number | undefined;
  for (;;) {
    const q = filteredAudit(db, log, filter).leftJoin('users as u', 'u.id', 'a.actor_id').select(EVENT_COLUMNS).orderBy('a.id', 'desc').limit(batchSize);
    if (below !== undefined) q.where('a.id', '<', below);
    const rows = (await q) as AuditRow[];
    if (rows.length) yield rows;
    if (rows.length < batchSize) return;
    below = Number(rows[rows.length - 1]!.id);
  }
}
