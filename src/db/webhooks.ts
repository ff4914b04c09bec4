import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { WebhookEvent } from '../vocabulary.js';
import { isPostgres } from './knex.js';

export interface WebhookRow {
  id: number;
  group_id: number;
  url: string;
  /** Sealed with KEYS_SECRET when one is set. */
  secret: string;
  /** A JSON array of event names. */
  events: string;
  active: boolean | number;
  created_at: string | Date;
  updated_at: string | Date;
}

export type DeliveryState = 'pending' | 'delivered' | 'failed';

export interface DeliveryRow {
  id: number | string;
  guid: string;
  webhook_id: number | null;
  group_id: number;
  event: WebhookEvent;
  payload: string;
  url: string;
  secret: string;
  redelivery: boolean | number;
  state: DeliveryState;
  attempts: number;
  next_attempt_at: string | Date;
  give_up_at: string | Date;
  claimed_until: string | Date | null;
  last_attempt_at: string | Date | null;
  response_status: number | null;
  response_body: string | null;
  error: string | null;
  duration_ms: number | null;
  created_at: string | Date;
}

/** How long a delivery is retried (with a growing wait between attempts) before it counts as failed. */
export const RETRY_FOR_MS = 24 * 60 * 60 * 1000;

const retriedUntil = (at: string) => new Date(Date.parse(at) + RETRY_FOR_MS).toISOString();

export function listWebhooks(db: Knex, groupId: number): Promise<WebhookRow[]> {
  return db('webhooks').where({ group_id: groupId }).orderBy('id');
}

export function countWebhooks(db: Knex, groupId: number): Promise<number> {
  return db('webhooks').where({ group_id: groupId }).count({ n: '*' }).first().then((row) => Number(row?.n ?? 0));
}

export function findWebhook(db: Knex, groupId: number, id: number): Promise<WebhookRow | undefined> {
  return db('webhooks').where({ group_id: groupId, id }).first();
}

export interface WebhookFields {
  url: string;
  secret?: string;
  events: readonly WebhookEvent[];
  active: boolean;
}

export async function insertWebhook(db: Knex, groupId: number, fields: WebhookFields & { secret: string }, at: string): Promise<WebhookRow> {
  const [row] = await db('webhooks')
    .insert({ group_id: groupId, url: fields.url, secret: fields.secret, events: JSON.stringify(fields.events), active: fields.active, created_at: at, updated_at: at })
    .returning('*');
  return row as WebhookRow;
}

/** Changes a webhook's fields (its secret only when one is given); false when there is no such webhook. */
export async function updateWebhook(db: Knex, groupId: number, id: number, fields: WebhookFields, at: string): Promise<boolean> {
  const changed = await db('webhooks')
    .where({ group_id: groupId, id })
    .update({
      url: fields.url,
      ...(fields.secret === undefined ? {} : { secret: fields.secret }),
      events: JSON.stringify(fields.events),
      active: fields.active,
      updated_at: at,
    });
  return changed === 1;
}

export async function deleteWebhook(db: Knex, groupId: number, id: number): Promise<boolean> {
  return (await db('webhooks').where({ group_id: groupId, id }).delete()) === 1;
}

/**
 * Writes one delivery of `event` for each active webhook of the group that listens to it, in the
 * caller's transaction. `payload` is built only when some webhook listens (it may read more rows).
 */
export async function enqueueDeliveries(
  db: Knex,
  groupId: number,
  event: WebhookEvent,
  payload: (guid: string) => Promise<Record<string, unknown>>,
  at: string,
): Promise<number> {
  const hooks = (await db('webhooks').where({ group_id: groupId }).select('id', 'url', 'secret', 'events', 'active')) as WebhookRow[];
  const listening = hooks.filter((hook) => Boolean(hook.active) && (JSON.parse(hook.events) as string[]).includes(event));
  if (!listening.length) return 0;
  const giveUpAt = retriedUntil(at);
  const rows = [];
  for (const hook of listening) {
    const guid = randomUUID();
    rows.push({
      guid,
      webhook_id: hook.id,
      group_id: groupId,
      event,
      payload: JSON.stringify(await payload(guid)),
      url: hook.url,
      secret: hook.secret,
      next_attempt_at: at,
      give_up_at: giveUpAt,
      created_at: at,
    });
  }
  await db('webhook_deliveries').insert(rows);
  return rows.length;
}

/**
 * Claims up to `limit` deliveries that are due and not claimed by a live sender: each is then this
 * caller's until `claimedUntil`. On PostgreSQL the rows are picked with FOR UPDATE SKIP LOCKED, so
 * senders running at once never pick the same row; on SQLite (one writer) each row is taken by a
 * conditional update that only one caller can win.
 */
export async function claimDueDeliveries(db: Knex, at: string, claimedUntil: string, limit: number): Promise<DeliveryRow[]> {
  if (isPostgres(db)) {
    const { rows } = (await db.raw(
      `update webhook_deliveries set claimed_until = ? where id in (
         select id from webhook_deliveries
          where state = 'pending' and next_attempt_at <= ? and (claimed_until is null or claimed_until <= ?)
          order by next_attempt_at limit ? for update skip locked)
       returning *`,
      [claimedUntil, at, at, limit],
    )) as { rows: DeliveryRow[] };
    return rows;
  }
  const due = (await db('webhook_deliveries')
    .where({ state: 'pending' })
    .where('next_attempt_at', '<=', at)
    .where((q) => q.whereNull('claimed_until').orWhere('claimed_until', '<=', at))
    .orderBy('next_attempt_at')
    .limit(limit)) as DeliveryRow[];
  const claimed: DeliveryRow[] = [];
  for (const row of due) {
    const won = await db('webhook_deliveries')
      .where({ id: row.id, state: 'pending' })
      .where((q) => q.whereNull('claimed_until').orWhere('claimed_until', '<=', at))
      .update({ claimed_until: claimedUntil });
    if (won === 1) claimed.push({ ...row, claimed_until: claimedUntil });
  }
  return claimed;
}

/** What one attempt at a delivery came to. */
export interface AttemptOutcome {
  at: string;
  responseStatus: number | null;
  responseBody: string | null;
  error: string | null;
  durationMs: number;
  /** Where the delivery stands after it: delivered, failed for good, or pending until `nextAttemptAt`. */
  state: DeliveryState;
  nextAttemptAt: string;
}

/**
 * Records an attempt and lets the claim go. Only while the claim is still the caller's (an
 * attempt that outlived its claim has been handed to another sender, whose word counts).
 */
export async function recordAttempt(db: Knex, row: DeliveryRow, outcome: AttemptOutcome): Promise<boolean> {
  const changed = await db('webhook_deliveries')
    .where({ id: row.id, claimed_until: row.claimed_until! })
    .update({
      state: outcome.state,
      attempts: row.attempts + 1,
      last_attempt_at: outcome.at,
      next_attempt_at: outcome.nextAttemptAt,
      response_status: outcome.responseStatus,
      response_body: outcome.responseBody,
      error: outcome.error,
      duration_ms: outcome.durationMs,
      claimed_until: null,
    });
  return changed === 1;
}

/**
 * Ends a webhook's deliveries still waiting to be sent (it was deleted or turned off): failed,
 * with `why`. The claim of one being sent at this moment is taken too, so its outcome is not
 * recorded over this.
 */
export async function cancelPendingDeliveries(db: Knex, webhookId: number, why: string, at: string): Promise<number> {
  return db('webhook_deliveries').where({ webhook_id: webhookId, state: 'pending' }).update({ state: 'failed', error: why, claimed_until: null, next_attempt_at: at });
}

/** Lets claims go unused (the sender is stopping): the rows are due again at once. */
export async function releaseClaims(db: Knex, rows: readonly DeliveryRow[]): Promise<void> {
  for (const row of rows) await db('webhook_deliveries').where({ id: row.id, claimed_until: row.claimed_until! }).update({ claimed_until: null });
}

/** A webhook's latest deliveries, newest first, from the `offset`-th on. */
export function listDeliveries(db: Knex, webhookId: number, limit: number, offset = 0): Promise<DeliveryRow[]> {
  return db('webhook_deliveries').where({ webhook_id: webhookId }).orderBy('id', 'desc').limit(limit).offset(offset);
}

export function countDeliveries(db: Knex, webhookId: number): Promise<number> {
  return db('webhook_deliveries').where({ webhook_id: webhookId }).count({ n: '*' }).first().then((row) => Number(row?.n ?? 0));
}

export function findDelivery(db: Knex, webhookId: number, id: number): Promise<DeliveryRow | undefined> {
  return db('webhook_deliveries').where({ webhook_id: webhookId, id }).first();
}

/** A delivery of `guid` to the webhook still waiting to be sent, if there is one. */
export function findPendingDelivery(db: Knex, webhookId: number, guid: string): Promise<DeliveryRow | undefined> {
  return db('webhook_deliveries').where({ webhook_id: webhookId, guid, state: 'pending' }).first();
}

/** Locks the webhook's row until the transaction ends. */
export async function lockWebhook(trx: Knex.Transaction, id: number): Promise<void> {
  await trx('webhooks').where({ id }).forUpdate().first('id');
}

/** A new delivery of an earlier one's event (same guid and body) to the webhook's URL and secret as they are now. */
export async function insertRedelivery(db: Knex, of: DeliveryRow, hook: WebhookRow, at: string): Promise<DeliveryRow> {
  const [row] = await db('webhook_deliveries')
    .insert({
      guid: of.guid,
      webhook_id: hook.id,
      group_id: hook.group_id,
      event: of.event,
      payload: of.payload,
      url: hook.url,
      secret: hook.secret,
      redelivery: true,
      next_attempt_at: at,
      give_up_at: retriedUntil(at),
      created_at: at,
    })
    .returning('*');
  return row as DeliveryRow;
}

/** Deliveries that are over (delivered or failed) and older than `before`. */
export async function pruneDeliveries(db: Knex, before: string): Promise<number> {
  return db('webhook_deliveries').whereNot({ state: 'pending' }).where('created_at', '<', before).delete();
}

/** The latest delivery of each webhook of the group that has any (the outbox's index on webhook_id, id finds each). */
export function latestDeliveries(db: Knex, groupId: number): Promise<DeliveryRow[]> {
  return db('webhook_deliveries').whereIn(
    'id',
    db('webhook_deliveries').whereIn('webhook_id', db('webhooks').where({ group_id: groupId }).select('id')).groupBy('webhook_id').max('id'),
  );
}

/** A webhook as the pages and the API show it: never its secret. */
export interface Webhook {
  id: number;
  groupId: number;
  url: string;
  events: WebhookEvent[];
  active: boolean;
  createdAt: string | Date;
  updatedAt: string | Date;
}

/** A delivery as Recent deliveries and the API show it: the request (headers and body) and what answered, never the secret. */
export interface Delivery {
  id: number;
  guid: string;
  /** Null once the webhook is deleted (its deliveries are kept for the group's record until pruned). */
  webhookId: number | null;
  event: WebhookEvent;
  state: DeliveryState;
  redelivery: boolean;
  attempts: number;
  createdAt: string | Date;
  lastAttemptAt: string | Date | null;
  /** When a pending delivery is tried next. */
  nextAttemptAt: string | Date | null;
  url: string;
  requestBody: string;
  responseStatus: number | null;
  responseBody: string | null;
  error: string | null;
  durationMs: number | null;
}
