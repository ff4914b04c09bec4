import { z } from 'zod';
import { RETRY_FOR_MS, type Delivery, type DeliveryState, type Webhook } from '../db/webhooks.js';
import { bigRecordId, recordId } from '../ids.js';
import { toIso } from '../time.js';
import { WEBHOOK_EVENTS, type WebhookEvent } from '../vocabulary.js';
import { timestamp } from './json.js';

/** The User-Agent of every delivery. */
export const USER_AGENT = 'Horizon-ID-Hookshot/1';

/**
 * The headers of a delivery as the sender sends them and as Recent deliveries and the API show
 * them: all but its length and its signature, which the sender adds. The signature is an HMAC of
 * the body with the secret; shown beside the body, it would let whoever reads them test guesses
 * of the secret offline.
 */
export function deliveryHeaders(delivery: { event: WebhookEvent; guid: string; webhookId: number | null }) {
  return {
    'Content-Type': 'application/json',
    'User-Agent': USER_AGENT,
    'X-Horizon-Event': delivery.event,
    'X-Horizon-Delivery': delivery.guid,
    'X-Horizon-Hook-ID': String(delivery.webhookId ?? ''),
  } as const;
}



const event = z.enum(WEBHOOK_EVENTS);

/** A webhook as the API names its fields: never its secret, which is only ever written. */
export const webhookJson = z.object({
  id: recordId,
  url: z.string().describe('Where each delivery is POSTed'),
  events: z.array(event).min(1).describe('The events delivered to this webhook, in the order the service lists them'),
  active: z.boolean().describe('Whether events are delivered; an inactive webhook keeps its settings and deliveries'),
  createdAt: timestamp,
  updatedAt: timestamp,
});
export type WebhookJson = z.infer<typeof webhookJson>;

export function presentWebhook(hook: Webhook): WebhookJson {
  return {
    id: hook.id,
    url: hook.url,
    events: [...hook.events],
    active: hook.active,
    createdAt: toIso(hook.createdAt)!,
    updatedAt: toIso(hook.updatedAt)!,
  };
}

const DELIVERY_STATES = ['pending', 'delivered', 'failed'] as const satisfies readonly DeliveryState[];

/** The headers shown of a delivery's request, in the order they are sent. */
const requestHeaders = z
  .strictObject({
    'Content-Type': z.literal('application/json'),
    'User-Agent': z.literal(USER_AGENT),
    'X-Horizon-Event': event.describe('The event'),
    'X-Horizon-Delivery': z.string().describe('The delivery\'s `guid`'),
    'X-Horizon-Hook-ID': z.string().describe('The webhook\'s id'),
  })
  .describe('The headers sent, but for Content-Length and the signature (`X-Horizon-Signature-256`), which is never shown');

/** One delivery of an event to a webhook: what was sent, and what answered the last attempt. */
export const deliveryJson = z.object({
  id: bigRecordId.describe('This delivery; a redelivery is a delivery of its own, with an id of its own'),
  guid: z.string().describe('Sent as `X-Horizon-Delivery`: the same for a redelivery as for the delivery it repeats, so a receiver can tell one event from another'),
  event,
  state: z
    .enum(DELIVERY_STATES)
    .describe(`\`pending\`: not sent yet, or not answered with a 2xx yet and sent again at \`nextAttemptAt\`; \`delivered\`: answered with a 2xx; \`failed\`: not answered with a 2xx within ${RETRY_FOR_MS / 3_600_000} hours of being made, and not sent again`),
  redelivery: z.boolean().describe('Made by a request to redeliver an earlier delivery'),
  attempts: z.int().min(0).describe('How many times it was sent'),
  createdAt: timestamp,
  lastAttemptAt: timestamp.nullable().describe('When it was last sent; null before the first attempt'),
  nextAttemptAt: timestamp.nullable().describe('When a pending delivery is sent next; null once it is delivered or failed'),
  url: z.string().describe('Where it is sent: the webhook\'s URL when the delivery was made'),
  request: z.object({
    headers: requestHeaders,
    body: z.string().describe('The JSON body (`{event, occurred_at, group, actor, data}`) as the text sent, which the signature is computed over'),
  }),
  response: z
    .object({
      status: z.int().describe('The HTTP status of the answer'),
      body: z.string().describe('The answer\'s body; a long one cut short'),
    })
    .nullable()
    .describe('What answered the last attempt; null before the first, or when nothing answered (see `error`)'),
  error: z.string().nullable().describe('Why the last attempt failed, when it did: no answer in time, a connection refused, a redirect (never followed), a refused address'),
  durationMs: z.int().min(0).nullable().describe('How long the last attempt took, in milliseconds'),
});
export type DeliveryJson = z.infer<typeof deliveryJson>;

export function presentDelivery(delivery: Delivery): DeliveryJson {
  return {
    id: delivery.id,
    guid: delivery.guid,
    event: delivery.event,
    state: delivery.state,
    redelivery: delivery.redelivery,
    attempts: delivery.attempts,
    createdAt: toIso(delivery.createdAt)!,
    lastAttemptAt: toIso(delivery.lastAttemptAt),
    nextAttemptAt: toIso(delivery.nextAttemptAt),
    url: delivery.url,
    request: {
      headers: deliveryHeaders(delivery),
      body: delivery.requestBody,
    },
    response: delivery.responseStatus === null ? null : { status: delivery.responseStatus, body: delivery.responseBody ?? '' },
    error: delivery.error,
    durationMs: delivery.durationMs,
  };
}
