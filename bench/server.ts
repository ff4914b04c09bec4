import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pipeline, Redis } from 'ioredis';
import pg from 'pg';
import { createIdp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { bareKoa, koaWithIo, koaWithIoPage, rawProvider, type Target } from './ceilings.js';

/**
 * One server under test, in a process of its own (so the load generator never shares its event
 * loop): started by bench/targets.ts with its spec as argv[2]; reports `ready` with its URL over
 * IPC, answers `memory`, and exits on `stop` (which is also when --cpu-prof writes its profile).
 */
export type ServerSpec =
  | { kind: 'koa' }
  | { kind: 'io' | 'io-page'; databaseUrl: string; redisUrl: string; redisKey: string; userId: number }
  | { kind: 'oidc' }
  | { kind: 'idp'; databaseUrl: string; redisUrl?: string; logLevel: string; countCalls?: boolean };

export type ToServer = { type: 'memory' } | { type: 'cpu' } | { type: 'calls' } | { type: 'stop' };
export type FromServer =
  | { type: 'ready'; url: string }
  | { type: 'memory'; rss: number; heapUsed: number }
  | { type: 'cpu'; micros: number }
  | { type: 'calls'; calls: Record<string, number> };

const spec = JSON.parse(process.argv[2] ?? '{}') as ServerSpec;
const send = (message: FromServer) => process.send?.(message);

/**
 * `--count-round-trips`: every Redis command and SQL statement this process sends, counted where
 * it leaves (ioredis's `sendCommand`, pg's `Client#query`), so that neighbours on the shared
 * Redis and PostgreSQL servers do not show up in the counts. Keys: `redis <COMMAND>`, `redis round
 * trips` (a pipeline or MULTI is one), `sql statements`, `sql <statement text>`, and `http
 * requests` (each request received: the divisor, so that requests a load generator gave up on at
 * the end of a run, which the server still serves, count on both sides).
 */
const calls = new Map<string, number>();
const bump = (key: string) => calls.set(key, (calls.get(key) ?? 0) + 1);
function countCalls(): void {
  const sendCommand = Redis.prototype.sendCommand;
  Redis.prototype.sendCommand = function (this: Redis, ...args: Parameters<Redis['sendCommand']>) {
    const [command, stream] = args;
    bump(`redis ${command.name.toUpperCase()}`);
    // A pipeline's commands come with the pipeline's stream and are written in one go.
    if (!stream) bump('redis round trips');
    return sendCommand.apply(this, args);
  };
  const exec = Pipeline.prototype.exec;
  Pipeline.prototype.exec = function (this: Pipeline, ...args: Parameters<Pipeline['exec']>) {
    bump('redis round trips');
    return exec.apply(this, args);
  };
  const query = pg.Client.prototype.query as (...args: unknown[]) => unknown;
  (pg.Client.prototype as { query: unknown }).query = function (this: pg.Client, ...args: unknown[]) {
    const first = args[0] as string | { text?: string } | undefined;
    const text = typeof first === 'string' ? first : first?.text;
    if (text !== undefined) {
      bump('sql statements');
      bump(`sql ${text.replace(/\s+/g, ' ').trim()}`);
    }
    return query.apply(this, args);
  };
}
const counting = spec.kind === 'idp' && !!spec.countCalls;
if (counting) countCalls();

const server = createServer();
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

async function start(): Promise<Target> {
  switch (spec.kind) {
    case 'koa':
      return bareKoa();
    case 'io':
      return koaWithIo(spec);
    case 'io-page':
      return koaWithIoPage(spec);
    case 'oidc':
      return rawProvider(url);
    case 'idp': {
      const config = loadConfig({
        PORT: new URL(url).port,
        ISSUER: url,
        DATABASE_URL: spec.databaseUrl,
        REDIS_URL: spec.redisUrl,
        LOG_LEVEL: spec.logLevel,
        // Counted on every call, as in production, but never reached: the bench measures the
        // cost of the limit, not its refusals.
        RATE_LIMIT_API_TOKEN: '999999999/1h',
        // Likewise: every exchange and refresh takes its point before the secret is compared and
        // gives it back after, but the load generator's 50 connections from one address would
        // otherwise be more requests in flight than a server's allowance, and wait their turn.
        RATE_LIMIT_CLIENT_AUTH: '999999999/1m',
      });
      const idp = await createIdp(config, { logger: createLogger(config.logLevel) });
      return { callback: idp.app.callback(), close: () => idp.close() };
    }
    default:
      throw new Error(`unknown server kind ${JSON.stringify(spec)}`);
  }
}

const target = await start();
// Handlers still running when the load generator hangs up (it closes its sockets at the end of a
// run) are waited for on stop, so closing the storage does not fail them and log faults that are
// not the service's.
let inFlight = 0;
server.on('request', (req, res) => {
  inFlight += 1;
  if (counting) bump('http requests');
  void Promise.resolve(target.callback(req, res)).finally(() => {
    inFlight -= 1;
  });
});
async function drained(limitMs: number): Promise<void> {
  for (const started = Date.now(); inFlight > 0 && Date.now() - started < limitMs; ) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

process.on('message', (message: ToServer) => {
  if (message.type === 'memory') {
    const rss = process.memoryUsage.rss();
    // Live heap after a full collection: what a leak would grow, unlike RSS, which V8 keeps.
    (globalThis as { gc?: () => void }).gc?.();
    send({ type: 'memory', rss, heapUsed: process.memoryUsage().heapUsed });
  } else if (message.type === 'cpu') {
    const { user, system } = process.cpuUsage();
    send({ type: 'cpu', micros: user + system });
  } else if (message.type === 'calls') {
    send({ type: 'calls', calls: Object.fromEntries(calls) });
  } else if (message.type === 'stop') {
    server.close();
    server.closeIdleConnections();
    drained(5000)
      .then(() => server.closeAllConnections())
      .then(() => target.close())
      .finally(() => process.exit(0));
  }
});
process.on('disconnect', () => process.exit(0));
send({ type: 'ready', url });
