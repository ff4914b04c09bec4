import { z } from 'zod';
import { WEBHOOK_EVENTS } from '../../vocabulary.js';
import { urlProblem } from './targets.js';

export const MAX_URL_LENGTH = 2000;
export const MIN_SECRET_LENGTH = 16;
export const MAX_SECRET_LENGTH = 256;

const url = z
  .string({ error: 'url is required' })
  .trim()
  .min(1, 'url is required')
  .max(MAX_URL_LENGTH, `url must be at most ${MAX_URL_LENGTH} characters`)
  .superRefine((v, ctx) => {
    const problem = urlProblem(v);
    if (problem) ctx.addIssue({ code: 'custom', message: `url ${problem}` });
  })
  .describe('Where each delivery is POSTed: http:// or https://, a public address (private and loopback ones only when the operator allows them). Redirects are not followed.')
  .meta({ format: 'uri' });

const secret = z
  .string({ error: `secret must be a string of ${MIN_SECRET_LENGTH} to ${MAX_SECRET_LENGTH} characters` })
  .min(MIN_SECRET_LENGTH, `secret must be at least ${MIN_SECRET_LENGTH} characters`)
  .max(MAX_SECRET_LENGTH, `secret must be at most ${MAX_SECRET_LENGTH} characters`)
  .describe('Signs each delivery: `X-Horizon-Signature-256: sha256=<hex HMAC-SHA256 of the body with this secret>`. Never shown again; stored encrypted with KEYS_SECRET.');

const events = z
  .array(z.enum(WEBHOOK_EVENTS, { error: `events must each be one of ${WEBHOOK_EVENTS.join(', ')}` }), { error: 'events must be a list of event names' })
  .min(1, 'events must name at least one event')
  .transform((list) => WEBHOOK_EVENTS.filter((event) => list.includes(event)))
  .describe('The events delivered to this webhook');

const active = z.boolean({ error: 'active must be true or false' }).describe('Whether events are delivered (true by default); an inactive webhook keeps its settings and deliveries');

/** A new webhook; an unknown field is an error. */
export const newWebhook = z.strictObject({ url, secret, events, active: active.default(true) });

/** An edit names only what it changes; the secret is kept unless a new one is given. */
export const webhookChanges = z.strictObject({ url: url.optional(), secret: secret.optional(), events: events.optional(), active: active.optional() });
