import { randomBytes } from 'node:crypto';
import { createServer, type RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hashTagged } from '../../adapters/redis.js';
import { createIdp } from '../../src/app.js';
import { answerUnreadableRequests } from '../../src/edge/unreadable-request.js';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { freshDatabase, profiles, TEST_REDIS_URL, type Profile, type TestDatabase } from './db.js';
import { scanKeys } from './redis-topologies.js';

/**
 * The harness: each suite runs on every storage profile, against a real server on a fresh
 * database of its own, over real HTTP.
 */
export { profiles, type Profile };

/** Defines the suite once per profile (SQLite always, PostgreSQL + Redis when both are configured), titled `title (profile)`. */
export function describeEachProfile(title: string, fn: (this: Mocha.Suite, profile: Profile) => void): void {
  for (const profile of profiles()) {
    describe(`${title} (${profile})`, function () {
      fn.call(this, profile);
    });
  }
}

/**
 * A server on a free loopback port; the issuer is its address unless `env` says otherwise
 * (`{port}` in a value is the port, e.g. `ISSUER: 'http://localhost:{port}'`). A
 * `shared` database is left in place when it stops, and instances given the same `keyPrefix`
 * share their Redis state, as instances of one deployment do.
 */
export async function startIdp(profile: Profile = 'sqlite', env: Record<string, string> = {}, shared?: TestDatabase, keyPrefix = `idp-test:${randomBytes(4).toString('hex')}:`) {
  const database = shared ?? (await freshDatabase(profile));
  const { server, url: local, close } = await listen();
  const config = loadConfig({
    NODE_ENV: 'test',
    PORT: new URL(local).port,
    ISSUER: local,
    DATABASE_URL: database.url,
    DATABASE_POOLING: database.pooling,
    REDIS_URL: profile === 'postgres+redis' ? TEST_REDIS_URL : undefined,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    // No periodic check of directory accounts: the suites check when they mean to (Check linked
    // accounts now, idp provider check, checkAccounts, checkDue), and a check the server made on
    // its own minute in between would take the change they look for.
    DIRECTORY_CHECK_INTERVAL_S: '0',
    ...Object.fromEntries(Object.entries(env).map(([k, v]) => [k, v.replace('{port}', new URL(local).port)])),
  });
  const idp = await createIdp(config, { logger: createLogger(config.logLevel), redisKeyPrefix: keyPrefix });
  server.on('request', idp.app.callback());
  answerUnreadableRequests(server);
  return {
    idp,
    db: idp.db,
    config,
    database,
    /** The issuer, e.g. http://127.0.0.1:40123 */
    url: config.issuer,
    /** Where the server listens, whatever the issuer says. */
    local,
    /** GET /metrics on the metrics listener, when `env` sets METRICS_PORT (0: a free port). */
    metricsUrl: idp.metricsUrl,
    async stop() {
      await close();
      // The adapter's keys, and on a Cluster (where they carry the prefix as a hash tag) the rate limits' too.
      const redis = idp.redis?.status === 'ready' ? idp.redis : undefined;
      const patterns = redis?.isCluster ? [`${hashTagged(keyPrefix)}*`, `${keyPrefix}*`] : [`${keyPrefix}*`];
      for (const pattern of redis ? patterns : []) {
        for (const key of await scanKeys(redis!, pattern)) await redis!.del(key);
      }
      await idp.close();
      if (!shared) await database.drop();
    },
  };
}

export type RunningIdp = Awaited<ReturnType<typeof startIdp>>;

/**
 * The suite's server: started on a fresh database before its tests, stopped after them. `env` may
 * be a function, read when the server starts, for settings known only then (another server's URL).
 */
export function useIdp(profile: Profile, env: Record<string, string> | (() => Record<string, string>) = {}): RunningIdp {
  return useHooks(() => startIdp(profile, typeof env === 'function' ? env() : env), (idp) => idp.stop());
}

/** The suite's fresh database of the profile's kind, dropped after its tests. */
export function useDatabase(profile: Profile): TestDatabase {
  return useHooks(() => freshDatabase(profile), (database) => database.drop());
}

/** Opens a resource in `before` and closes it in `after`; the handle reads the open one. */
export function useHooks<T extends object>(open: () => Promise<T>, close: (resource: T) => Promise<void>): T {
  let opened: T | undefined;
  before(async () => {
    opened = await open();
  });
  after(async () => {
    if (opened) await close(opened);
    opened = undefined;
  });
  return new Proxy({} as T, {
    get(_, key) {
      if (!opened) throw new Error(`read ${String(key)} before the suite's before hook opened it`);
      return Reflect.get(opened, key);
    },
  });
}

/** An HTTP server on a free loopback port, its URL, and a close that also drops kept-alive connections. */
export async function listen(handler?: RequestListener) {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    server,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A loopback port free a moment ago, for a program that must be told its port. */
export async function freePort(): Promise<number> {
  const { url, close } = await listen();
  await close();
  return Number(new URL(url).port);
}

/** Polls `ready` until it holds; fails with `why()` after `timeoutMs`. */
export async function waitFor(ready: () => Promise<boolean>, why: () => string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await ready())) {
    if (Date.now() > deadline) throw new Error(why());
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
