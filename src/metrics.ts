import type { EventEmitter } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/**
 * What the service counts for Prometheus (prom-client), served on a listener of its own
 * (`METRICS_PORT`, loopback by default), never on the public port. Every label takes values from a
 * short fixed list (a route pattern, a status code, a kind, an outcome, a limit's name): never a
 * token, a user, a client id or a raw path, so a scrape tells nothing secret and its size stays
 * bounded. Counting is a counter increment or a histogram observation, nothing asynchronous; the
 * hashing queue's gauges are read only when scraped.
 */

/** Tokens the service hands out: oidc-provider's three models, and personal access tokens (`ha_`). */
export type TokenKind = 'access_token' | 'refresh_token' | 'authorization_code' | 'personal_access_token';

/**
 * How a sign-in form's attempt ended. `success` is a completed sign-in (password alone, or the
 * second factor after it, or a passkey); `second_factor_needed` a right password that now waits
 * for the second factor, which ends as `success` or `second_factor_failed`. With a directory
 * (LDAP): `directory_unavailable` when it could not be asked (down, or no answer in 5 s), and
 * `directory_refused` for a right directory password that cannot sign in here (no account may be made).
 */
export type SignInOutcome =
  | 'success'
  | 'wrong_password'
  | 'rate_limited'
  | 'busy'
  | 'disabled'
  | 'second_factor_needed'
  | 'second_factor_failed'
  | 'passkey_failed'
  | 'directory_unavailable'
  | 'directory_refused';

/**
 * How a sign-in through an upstream provider ended: `success` (signed in, or the second factor now
 * asked), `link` and `sign_up` (the person was sent to link an existing account or make one), or
 * the reason it failed, as the failure page says it.
 */
export type UpstreamResult =
  | 'success'
  | 'link'
  | 'sign_up'
  | 'linked'
  | 'denied'
  | 'upstream_error'
  | 'bad_state'
  | 'expired'
  | 'timeout'
  | 'unreachable'
  | 'invalid_response'
  | 'disabled'
  | 'domain_not_allowed'
  | 'sign_up_closed'
  | 'address_unverified'
  | 'no_address'
  | 'account_disabled'
  | 'identity_taken'
  | 'rate_limited';

/** Where an outage was met. */
export type StoreName = 'database' | 'redis';

export interface Metrics {
  /** One answered request: `route` is a route pattern or a fixed family, never the path asked for. */
  httpRequest(route: string, method: string, status: number, seconds: number): void;
  tokenIssued(kind: TokenKind): void;
  signIn(outcome: SignInOutcome): void;
  /** A sign-in through the upstream provider of this slug, by how it ended. */
  upstreamSignIn(provider: string, result: UpstreamResult): void;
  /** A request refused by the abuse limit of this name (`signin-ip`, `api-token`, …). */
  rateLimited(limit: string): void;
  storageError(store: StoreName): void;
  /** A back-channel logout token delivered to an application, or not (refused, unreachable, timed out). */
  backchannelLogout(result: 'delivered' | 'failed'): void;
  /** One attempt at a webhook delivery: delivered (2xx), retried later, or failed for good. */
  webhookAttempt(result: WebhookAttemptResult): void;
}

export type WebhookAttemptResult = 'delivered' | 'retry' | 'failed';

/** When no metrics listener is configured: counting costs nothing. */
export const noMetrics: Metrics = {
  httpRequest() {},
  tokenIssued() {},
  signIn() {},
  upstreamSignIn() {},
  rateLimited() {},
  storageError() {},
  backchannelLogout() {},
  webhookAttempt() {},
};

/** The password-hashing queue's load, read at each scrape. */
export interface KdfLoad {
  running: number;
  waiting: number;
}

/** Methods a browser or client sends; anything else is counted as `other`. */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/**
 * One instance's metrics, on a registry of its own (not prom-client's global one), so several
 * servers in one process (the tests) each count their own.
 */
export class PrometheusMetrics implements Metrics {
  readonly registry = new Registry();
  private kdfLoad: () => KdfLoad = () => ({ running: 0, waiting: 0 });

  private readonly requests = new Counter({
    name: 'idp_http_requests_total',
    help: 'HTTP requests answered, by route pattern (or family), method and status code.',
    labelNames: ['route', 'method', 'status'] as const,
    registers: [this.registry],
  });

  private readonly durations = new Histogram({
    name: 'idp_http_request_duration_seconds',
    help: 'Time to answer an HTTP request, by route pattern (or family), method and status code.',
    labelNames: ['route', 'method', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });

  /** A counter of this registry with one label, whose values come from a short fixed list. */
  private counter<L extends string>(name: string, help: string, label: L): Counter<L> {
    return new Counter({ name, help, labelNames: [label], registers: [this.registry] });
  }

  private readonly tokens = this.counter('idp_tokens_issued_total', 'Tokens issued, by kind (access_token, refresh_token, authorization_code, personal_access_token).', 'kind');

  private readonly signIns = this.counter('idp_sign_ins_total', 'Sign-in attempts on the sign-in forms, by outcome.', 'outcome');

  private readonly upstreamSignIns = new Counter({
    name: 'idp_upstream_sign_ins_total',
    help: 'Sign-ins through upstream providers, by provider slug and result (success, link, sign_up, or the failure\'s reason).',
    labelNames: ['provider', 'result'] as const,
    registers: [this.registry],
  });

  private readonly refusals = this.counter('idp_rate_limit_refusals_total', 'Requests refused by an abuse limit, by the limit\'s name.', 'limit');

  private readonly storageErrors = this.counter('idp_storage_errors_total', 'Storage outages met while answering (each one a 503) or in background work, by store (database, redis).', 'store');

  private readonly webhookAttempts = this.counter('idp_webhook_attempts_total', 'Attempts at webhook deliveries, by result (delivered, retry: to be tried again, failed: given up after 24 h).', 'result');
  private readonly backchannelLogouts = this.counter('idp_backchannel_logouts_total', 'Back-channel logout tokens sent to applications, by result (delivered, failed).', 'result');

  constructor() {
    const load = () => this.kdfLoad();
    new Gauge({
      name: 'idp_kdf_running',
      help: 'Password hashes running now on this instance.',
      registers: [this.registry],
      collect() {
        this.set(load().running);
      },
    });
    new Gauge({
      name: 'idp_kdf_waiting',
      help: 'Password hashes waiting in this instance\'s queue.',
      registers: [this.registry],
      collect() {
        this.set(load().waiting);
      },
    });
    // The usual process_* and nodejs_* series (CPU, memory, event loop lag, GC), under their standard names.
    collectDefaultMetrics({ register: this.registry });
  }

  httpRequest(route: string, method: string, status: number, seconds: number): void {
    const labels = { route, method: METHODS.has(method) ? method : 'other', status: String(status) };
    this.requests.inc(labels);
    this.durations.observe(labels, seconds);
  }

  tokenIssued(kind: TokenKind): void {
    this.tokens.inc({ kind });
  }

  signIn(outcome: SignInOutcome): void {
    this.signIns.inc({ outcome });
  }

  upstreamSignIn(provider: string, result: UpstreamResult): void {
    this.upstreamSignIns.inc({ provider, result });
  }

  rateLimited(limit: string): void {
    this.refusals.inc({ limit });
  }

  storageError(store: StoreName): void {
    this.storageErrors.inc({ store });
  }

  webhookAttempt(result: WebhookAttemptResult): void {
    this.webhookAttempts.inc({ result });
  }

  backchannelLogout(result: 'delivered' | 'failed'): void {
    this.backchannelLogouts.inc({ result });
  }

  /** The hashing queue whose load the gauges report. */
  watchKdf(load: () => KdfLoad): void {
    this.kdfLoad = load;
  }
}

/** oidc-provider's events for the tokens it saves: one per code, access token and refresh token issued. */
const PROVIDER_TOKEN_EVENTS: Record<string, TokenKind> = {
  'authorization_code.saved': 'authorization_code',
  'access_token.saved': 'access_token',
  'refresh_token.saved': 'refresh_token',
};

/** Counts the tokens the provider issues, from its events. */
export function countProviderTokens(provider: Pick<EventEmitter, 'on'>, metrics: Metrics): void {
  for (const [event, kind] of Object.entries(PROVIDER_TOKEN_EVENTS)) provider.on(event, () => metrics.tokenIssued(kind));
}

export interface MetricsListener {
  /** e.g. http://127.0.0.1:9464/metrics */
  url: string;
  close(): Promise<void>;
}

/**
 * The metrics listener: GET /metrics answers the Prometheus text format; every other path is a
 * 404. Rejects with a message naming METRICS_HOST and METRICS_PORT when it cannot listen.
 */
export async function serveMetrics(metrics: PrometheusMetrics, host: string, port: number): Promise<MetricsListener> {
  const server = createServer((req, res) => {
    answerScrape(metrics, req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end('metrics could not be collected\n');
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(new Error(`cannot listen for metrics on METRICS_HOST=${host} METRICS_PORT=${port}: ${err.code ?? err.message}`)));
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${shownHost}:${address.port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function answerScrape(metrics: PrometheusMetrics, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = (req.url ?? '').split('?')[0];
  if (path !== '/metrics') {
    res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end('not found: metrics are at /metrics\n');
    return;
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { Allow: 'GET, HEAD', 'Content-Type': 'text/plain; charset=utf-8' }).end('method not allowed\n');
    return;
  }
  const body = await metrics.registry.metrics();
  res.writeHead(200, { 'Content-Type': metrics.registry.contentType, 'Cache-Control': 'no-store' });
  res.end(req.method === 'HEAD' ? undefined : body);
}
