import type { Knex } from 'knex';

export interface AuditEvent {
  groupId: number | null;
  /** An event of a user's own account, shown to them (with no group). */
  userId?: number | null;
  actorId: number | null;
  action: string;
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
}

/** Written in the same transaction as the change it records: no change without its trace. */
export async function recordAudit(db: Knex, event: AuditEvent, at: string): Promise<void> {
  await db('audit_events').insert({
    group_id: event.groupId,
    user_id: event.userId ?? null,
    actor_id: event.actorId,
    action: event.action,
    target: event.target,
    details: JSON.stringify(event.details ?? {}),
    // The column holds 64 characters; an address is at most 45 (IPv6 with an IPv4 tail).
    ip: event.ip === null ? null : event.ip.slice(0, 64),
    created_at: at,
  });
}

export function listAudit(db: Knex, groupId: number, limit = 200): Promise<AuditRow[]> {
  return db('audit_events as a')
    .leftJoin('users as u', 'u.id', 'a.actor_id')
    .where('a.group_id', groupId)
    .select('a.id', 'a.action', 'a.target', 'a.details', 'a.ip', 'a.created_at', 'a.actor_deleted', 'u.username as actor_username')
    .orderBy('a.id', 'desc')
    .limit(limit);
}

/** The latest events of a user's own account with one of `actions`, newest first. */
export function listUserAudit(db: Knex, userId: number, actions: readonly string[], limit = 20): Promise<AuditRow[]> {
  return db('audit_events as a')
    .leftJoin('users as u', 'u.id', 'a.actor_id')
    .where('a.user_id', userId)
    .whereIn('a.action', actions)
    .select('a.id', 'a.action', 'a.target', 'a.details', 'a.ip', 'a.created_at', 'a.actor_deleted', 'u.username as actor_username')
    .orderBy('a.id', 'desc')
    .limit(limit);
}
