import type { Knex } from 'knex';
import { recordAudit } from '../../db/audit.js';
import { lockGroup } from '../../db/groups.js';
import * as store from '../../db/webhooks.js';
import type { Delivery, Webhook } from '../../db/webhooks.js';
import { ConflictError, NotFoundError, ValidationError } from '../../errors.js';
import type { KeyCipher } from '../../key-encryption.js';
import { now } from '../../time.js';
import { isWebhookEvent } from '../../vocabulary.js';
import { auditActor, changedFields } from '../context.js';
import { requireGroupAction, type GroupAccess } from '../groups.js';
import * as rules from '../rules.js';
import { claimSubmission, completeSubmission, type SubmissionKey } from '../submissions.js';
import { newWebhook, webhookChanges } from './rules.js';

export type { Delivery, Webhook } from '../../db/webhooks.js';
import { sealWebhookSecret } from './secrets.js';
import { checkTarget, RefusedTarget } from './targets.js';

/** What managing webhooks needs: the database, KEYS_SECRET's cipher for their secrets, and whether private targets are allowed. */
export interface WebhookDeps {
  db: Knex;
  cipher: KeyCipher | undefined;
  allowPrivate: boolean;
}

/** How long a delivery is retried, for the surfaces that state it. */
export { RETRY_FOR_MS } from '../../db/webhooks.js';

/** GitHub's limit per repository: a group with more is better served by one receiver that fans out. */
export const MAX_WEBHOOKS_PER_GROUP = 20;
/** Recent deliveries shows this many of a webhook's latest. */
export const RECENT_DELIVERIES = 30;

/** Why a delivery waiting for a retry was not sent: its webhook was turned off, or deleted. */
export const TURNED_OFF = 'not sent: the webhook was turned off';
export const DELETED = 'not sent: the webhook was deleted';


function webhookOf(row: store.WebhookRow): Webhook {
  const events = (JSON.parse(row.events) as string[]).filter(isWebhookEvent);
  return { id: Number(row.id), groupId: Number(row.group_id), url: row.url, events, active: Boolean(row.active), createdAt: row.created_at, updatedAt: row.updated_at };
}

/** The URL is refused, as a field error, when it is or resolves to an address webhooks may not reach. */
async function requireReachable(deps: WebhookDeps, url: string): Promise<void> {
  try {
    await checkTarget(url, deps.allowPrivate);
  } catch (err) {
    if (err instanceof RefusedTarget) throw new ValidationError('url', `url is refused: ${err.message}`);
    throw err;
  }
}

export async function webhooksOf(db: Knex, access: GroupAccess): Promise<Webhook[]> {
  requireGroupAction(access, 'manage-webhooks');
  return (await store.listWebhooks(db, access.group.id)).map(webhookOf);
}

/** The row of a webhook of the group (owners only); another group's is as unknown as none. */
async function webhookRowOfGroup(db: Knex, access: GroupAccess, id: number): Promise<store.WebhookRow> {
  requireGroupAction(access, 'manage-webhooks');
  const row = Number.isSafeInteger(id) ? await store.findWebhook(db, access.group.id, id) : undefined;
  if (!row) throw new NotFoundError('no such webhook in this group');
  return row;
}

export async function webhookOfGroup(db: Knex, access: GroupAccess, id: number): Promise<Webhook> {
  return webhookOf(await webhookRowOfGroup(db, access, id));
}

/**
 * Adds a webhook. With the one-time key of the form that sent it (services/submissions.ts), a
 * repeated submission adds nothing (RepeatedSubmission).
 */
export async function createWebhook(deps: WebhookDeps, access: GroupAccess, input: unknown, submission?: SubmissionKey): Promise<Webhook> {
  requireGroupAction(access, 'manage-webhooks');
  const fields = rules.parse(newWebhook, input);
  await requireReachable(deps, fields.url);
  const { actor, group } = access;
  const row = await deps.db.transaction(async (trx) => {
    await claimSubmission(trx, submission);
    // The group's row is locked while its webhooks are counted: parallel additions at the limit
    // wait for each other on PostgreSQL (SQLite has one writer), so the limit holds.
    await lockGroup(trx, group.id);
    if ((await store.countWebhooks(trx, group.id)) >= MAX_WEBHOOKS_PER_GROUP) {
      throw new ConflictError('url', `a group can have at most ${MAX_WEBHOOKS_PER_GROUP} webhooks`);
    }
    const at = now();
    const created = await store.insertWebhook(trx, group.id, { ...fields, secret: sealWebhookSecret(deps.cipher, fields.secret) }, at);
    await recordAudit(trx, { groupId: group.id, ...auditActor(actor), action: 'webhook.create', target: fields.url, details: { events: fields.events }, ip: actor.ip }, at);
    await completeSubmission(trx, submission, created.id);
    return created;
  });
  return webhookOf(row);
}

export async function updateWebhook(deps: WebhookDeps, access: GroupAccess, id: number, input: unknown): Promise<Webhook> {
  const before = await webhookOfGroup(deps.db, access, id);
  const fields = rules.parse(webhookChanges, input);
  const after = { url: fields.url ?? before.url, events: fields.events ?? before.events, active: fields.active ?? before.active };
  if (after.url !== before.url) await requireReachable(deps, after.url);
  const changes = changedFields({ url: before.url, events: before.events, active: before.active }, after);
  // The secret is never written to the log; that it changed is.
  if (fields.secret !== undefined) changes.secret = { from: '…', to: '…' };
  if (!Object.keys(changes).length) return before;
  const { actor, group } = access;
  const at = now();
  await deps.db.transaction(async (trx) => {
    const secret = fields.secret === undefined ? undefined : sealWebhookSecret(deps.cipher, fields.secret);
    if (!(await store.updateWebhook(trx, group.id, id, { ...after, secret }, at))) throw new NotFoundError('no such webhook in this group');
    // Turned off: what was waiting for a retry is not sent either.
    if (before.active && !after.active) await store.cancelPendingDeliveries(trx, id, TURNED_OFF, at);
    await recordAudit(trx, { groupId: group.id, ...auditActor(actor), action: 'webhook.update', target: after.url, details: { changes }, ip: actor.ip }, at);
  });
  return { ...before, ...after, updatedAt: at };
}

export async function deleteWebhook(db: Knex, access: GroupAccess, id: number): Promise<void> {
  const hook = await webhookOfGroup(db, access, id);
  const { actor, group } = access;
  await db.transaction(async (trx) => {
    const at = now();
    await store.cancelPendingDeliveries(trx, id, DELETED, at);
    if (!(await store.deleteWebhook(trx, group.id, id))) throw new NotFoundError('no such webhook in this group');
    await recordAudit(trx, { groupId: group.id, ...auditActor(actor), action: 'webhook.delete', target: hook.url, details: { events: hook.events }, ip: actor.ip }, at);
  });
}


function deliveryOf(row: store.DeliveryRow): Delivery {
  return {
    id: Number(row.id),
    guid: row.guid,
    webhookId: row.webhook_id === null ? null : Number(row.webhook_id),
    event: row.event,
    state: row.state,
    redelivery: Boolean(row.redelivery),
    attempts: Number(row.attempts),
    createdAt: row.created_at,
    lastAttemptAt: row.last_attempt_at,
    nextAttemptAt: row.state === 'pending' ? row.next_attempt_at : null,
    url: row.url,
    requestBody: row.payload,
    responseStatus: row.response_status,
    responseBody: row.response_body,
    error: row.error,
    durationMs: row.duration_ms,
  };
}

/** A webhook's latest deliveries, newest first. */
export async function deliveriesOf(db: Knex, access: GroupAccess, webhookId: number): Promise<Delivery[]> {
  const hook = await webhookOfGroup(db, access, webhookId);
  return (await store.listDeliveries(db, hook.id, RECENT_DELIVERIES)).map(deliveryOf);
}

/** One page of a webhook's deliveries, newest first, out of all that are kept. */
export async function deliveryPage(db: Knex, access: GroupAccess, webhookId: number, page: { limit: number; offset: number }): Promise<{ total: number; items: Delivery[] }> {
  const hook = await webhookOfGroup(db, access, webhookId);
  const total = await store.countDeliveries(db, hook.id);
  return { total, items: (await store.listDeliveries(db, hook.id, page.limit, page.offset)).map(deliveryOf) };
}

export async function deliveryOfWebhook(db: Knex, access: GroupAccess, webhookId: number, deliveryId: number): Promise<Delivery> {
  const hook = await webhookOfGroup(db, access, webhookId);
  const row = Number.isSafeInteger(deliveryId) ? await store.findDelivery(db, hook.id, deliveryId) : undefined;
  if (!row) throw new NotFoundError('no such delivery of this webhook');
  return deliveryOf(row);
}

/**
 * Sends a delivery's event again (same X-Horizon-Delivery and body) to the webhook's URL and
 * secret as they are now: a new delivery, retried like any other, unless one of that event is
 * still waiting to be sent. Returns the delivery that will send it.
 */
export async function redeliver(db: Knex, access: GroupAccess, webhookId: number, deliveryId: number): Promise<Delivery> {
  const hook = await webhookRowOfGroup(db, access, webhookId);
  const original = Number.isSafeInteger(deliveryId) ? await store.findDelivery(db, hook.id, deliveryId) : undefined;
  if (!original) throw new NotFoundError('no such delivery of this webhook');
  // One copy of an event waits at a time: asking again while one waits (a flood of Redeliver,
  // 16 at once) answers with that one, so no one can make the service send a target many copies.
  return deliveryOf(
    await db.transaction(async (trx) => {
      await store.lockWebhook(trx, hook.id);
      return (await store.findPendingDelivery(trx, hook.id, original.guid)) ?? store.insertRedelivery(trx, original, hook, now());
    }),
  );
}

/** The latest delivery of each of the group's webhooks that has one, by webhook id (one query, for the list of webhooks). */
export async function latestDeliveriesOf(db: Knex, access: GroupAccess): Promise<Map<number, Delivery>> {
  requireGroupAction(access, 'manage-webhooks');
  const rows = await store.latestDeliveries(db, access.group.id);
  return new Map(rows.map((row) => [Number(row.webhook_id), deliveryOf(row)]));
}
