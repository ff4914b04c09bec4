import { createHmac } from 'node:crypto';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import type { Knex } from 'knex';
import { claimDueDeliveries, pruneDeliveries, recordAttempt, releaseClaims, type AttemptOutcome, type DeliveryRow } from '../../db/webhooks.js';
import type { KeyCipher } from '../../key-encryption.js';
import type { Logger } from '../../log.js';
import type { Metrics } from '../../metrics.js';
import { deliveryHeaders, USER_AGENT } from '../../presenters/webhook.js';
import { toIso } from '../../time.js';
import { openWebhookSecret } from './secrets.js';
import { guardedLookup, hostOf, isPublicAddress, RefusedTarget } from './targets.js';

/** Where the sender's readers look for it; it is the presenter's, which shows the headers too. */
export { USER_AGENT };

export interface SenderOptions {
  db: Knex;
  cipher: KeyCipher | undefined;
  log: Logger;
  metrics: Metrics;
  /** Send to private and loopback addresses too (WEBHOOKS_ALLOW_PRIVATE). */
  allowPrivate: boolean;
  /** How often the outbox is looked at for deliveries that are due. */
  pollMs: number;
  /** The wait before the first retry; each further retry waits twice as long (at most an hour). */
  retryMs: number;
  /** The longest one attempt may take, connection to last byte. */
  timeoutMs: number;
}

export interface WebhookSender {
  /** Sends what is due now; resolves with how many deliveries were attempted. */
  sendDue(): Promise<number>;
  /** Stops looking at the outbox, cuts attempts under way and lets their claims go (they are due again at once for another instance). */
  stop(): Promise<void>;
}

/** Deliveries claimed at once by one instance. */
const BATCH = 10;
/** The longest wait between two attempts. */
const MAX_WAIT_MS = 60 * 60 * 1000;
/** What of a response body is kept for Recent deliveries. */
const KEPT_BODY = 2000;
/** Finished deliveries are kept this long for Recent deliveries. */
export const KEPT_FOR_MS = 30 * 24 * 60 * 60 * 1000;

/** `sha256=<hex HMAC-SHA256 of the body>`: GitHub's X-Hub-Signature-256, so existing verifiers check it. */
export function signatureOf(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/**
 * The outbox's sender: one per instance, started with the process and stopped with it. It claims
 * due deliveries (never one another instance holds), sends each once, and records the attempt;
 * a failed attempt is due again after a wait that doubles each time, until 24 hours after the event.
 */
export function startWebhookSender(options: SenderOptions): WebhookSender {
  const { db, log, metrics } = options;
  const inFlight = new Map<string, { row: DeliveryRow; abort: AbortController }>();
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<number> | undefined;
  let lastPrune = 0;

  async function attempt(row: DeliveryRow): Promise<void> {
    const abort = new AbortController();
    inFlight.set(String(row.id), { row, abort });
    try {
      const sent = await send(row, options, abort.signal);
      if (stopped && sent.error === CUT) return;
      const outcome = outcomeOf(row, sent, options.retryMs);
      if (!(await recordAttempt(db, row, outcome))) return;
      metrics.webhookAttempt(outcome.state === 'delivered' ? 'delivered' : outcome.state === 'failed' ? 'failed' : 'retry');
      if (outcome.state !== 'delivered') {
        log.warn({ delivery: row.guid, event: row.event, webhook: row.webhook_id, status: sent.responseStatus, error: sent.error, state: outcome.state }, 'webhook delivery failed');
      }
    } finally {
      inFlight.delete(String(row.id));
    }
  }

  async function sendDue(): Promise<number> {
    let attempted = 0;
    for (;;) {
      if (stopped) return attempted;
      const at = new Date();
      const rows = await claimDueDeliveries(db, at.toISOString(), new Date(at.getTime() + options.timeoutMs + 30_000).toISOString(), BATCH);
      if (!rows.length) break;
      attempted += rows.length;
      await Promise.all(rows.map((row) => attempt(row).catch((err: unknown) => log.warn({ err, delivery: row.guid }, 'recording a webhook delivery failed'))));
      if (rows.length < BATCH) break;
    }
    if (Date.now() - lastPrune > 60 * 60 * 1000) {
      lastPrune = Date.now();
      await pruneDeliveries(db, new Date(Date.now() - KEPT_FOR_MS).toISOString());
    }
    return attempted;
  }

  function tick(): void {
    running = sendDue()
      .catch((err: unknown) => {
        log.warn({ err }, 'sending webhook deliveries failed');
        return 0;
      })
      .finally(() => {
        running = undefined;
        if (!stopped) timer = setTimeout(tick, options.pollMs).unref();
      });
  }
  timer = setTimeout(tick, options.pollMs).unref();

  return {
    async sendDue() {
      // One pass at a time per instance: a pass already under way is waited for, then this one runs.
      while (running) await running;
      running = sendDue();
      try {
        return await running;
      } finally {
        running = undefined;
      }
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      const cut = [...inFlight.values()];
      for (const { abort } of cut) abort.abort();
      await running?.catch(() => 0);
      await releaseClaims(db, cut.map(({ row }) => row)).catch((err: unknown) => log.warn({ err }, 'releasing webhook deliveries failed'));
    },
  };
}

/** What one POST came to. */
interface Sent {
  responseStatus: number | null;
  responseBody: string | null;
  error: string | null;
  durationMs: number;
}

const CUT = 'the service stopped during the attempt';

/** The attempt's record: delivered on a 2xx, else due again after the wait, or failed once past the retry period. */
function outcomeOf(row: DeliveryRow, sent: Sent, retryMs: number): AttemptOutcome {
  const at = new Date();
  const base = { at: at.toISOString(), responseStatus: sent.responseStatus, responseBody: sent.responseBody, error: sent.error, durationMs: sent.durationMs };
  if (sent.responseStatus !== null && sent.responseStatus >= 200 && sent.responseStatus < 300 && !sent.error) {
    return { ...base, state: 'delivered', nextAttemptAt: base.at };
  }
  const wait = Math.min(retryMs * 2 ** row.attempts, MAX_WAIT_MS);
  // A tenth either way, so deliveries that failed together (a receiver's outage) come back spread out.
  const next = new Date(at.getTime() + wait * (0.9 + Math.random() * 0.2));
  const giveUpAt = new Date(toIso(row.give_up_at)!);
  if (next > giveUpAt) return { ...base, state: 'failed', nextAttemptAt: base.at };
  return { ...base, state: 'pending', nextAttemptAt: next.toISOString() };
}

/** POSTs the delivery once: no redirect followed, at most `timeoutMs`, only to addresses allowed. */
async function send(row: DeliveryRow, options: SenderOptions, cut: AbortSignal): Promise<Sent> {
  const started = performance.now();
  const took = () => Math.round(performance.now() - started);
  let secret: string;
  try {
    secret = openWebhookSecret(options.cipher, row.secret);
  } catch {
    return { responseStatus: null, responseBody: null, error: 'the webhook secret cannot be read with this KEYS_SECRET', durationMs: 0 };
  }
  const host = hostOf(row.url);
  if (!options.allowPrivate && isIP(host) && !isPublicAddress(host)) {
    return { responseStatus: null, responseBody: null, error: `refused: ${host} is not a public address`, durationMs: 0 };
  }
  const body = Buffer.from(row.payload);
  const headers = {
    ...deliveryHeaders({ event: row.event, guid: row.guid, webhookId: row.webhook_id }),
    'Content-Length': String(body.length),
    'X-Horizon-Signature-256': signatureOf(secret, row.payload),
  };
  const signal = AbortSignal.any([cut, AbortSignal.timeout(options.timeoutMs)]);
  const request = row.url.startsWith('https:') ? httpsRequest : httpRequest;
  try {
    const response = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = request(row.url, { method: 'POST', headers, signal, lookup: guardedLookup(options.allowPrivate), agent: false }, resolve);
      req.on('error', reject);
      req.end(body);
    });
    const status = response.statusCode ?? 0;
    const text = await readSome(response, signal);
    if (status >= 300 && status < 400) {
      return { responseStatus: status, responseBody: text, error: `redirect not followed${response.headers.location ? ` (Location: ${String(response.headers.location).slice(0, 150)})` : ''}`, durationMs: took() };
    }
    return { responseStatus: status, responseBody: text, error: null, durationMs: took() };
  } catch (err) {
    return { responseStatus: null, responseBody: null, error: cut.aborted ? CUT : describeFailure(err, options.timeoutMs), durationMs: took() };
  }
}

/** The first KEPT_BODY characters of a response; the rest is not read. */
async function readSome(response: IncomingMessage, signal: AbortSignal): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of response) {
      chunks.push(chunk as Buffer);
      size += (chunk as Buffer).length;
      if (size >= KEPT_BODY * 4 || signal.aborted) break;
    }
  } catch {
    // What arrived before the connection broke is kept.
  } finally {
    response.destroy();
  }
  return Buffer.concat(chunks).toString('utf8').slice(0, KEPT_BODY);
}

function describeFailure(err: unknown, timeoutMs: number): string {
  const e = err as { name?: string; code?: string; message?: string };
  if (err instanceof RefusedTarget || e.code === 'ETARGETREFUSED') return `refused: ${e.message}`;
  if (e.name === 'TimeoutError' || e.name === 'AbortError') return `no answer within ${timeoutMs / 1000} s`;
  if (e.code === 'ECONNREFUSED') return 'connection refused';
  if (e.code === 'ENOTFOUND') return 'the host name does not resolve';
  if (e.code === 'ECONNRESET') return 'the connection was reset';
  if (e.code?.startsWith('ERR_TLS') || e.code?.includes('CERT')) return `TLS: ${e.code}`;
  return (e.code ?? e.message ?? 'the request failed').slice(0, 200);
}
