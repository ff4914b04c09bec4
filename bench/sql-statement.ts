import { AsyncLocalStorage } from 'node:async_hooks';
import { parseArgs } from 'node:util';
import type { Knex } from 'knex';
import pg from 'pg';
import { createDb } from '../src/db/knex.js';
import { pageGroupsOfUser } from '../src/db/groups.js';
import { createBenchDatabase, seed } from './fixtures.js';
import { fmt } from './report.js';
import { median } from './stats.js';

/**
 * What one SQL statement costs this process, by the way it is sent: the API's page of groups (the
 * statement of `api-ho`), sent by 50 concurrent callers over a pool of 10 connections, as the
 * service does, in each of these ways:
 * - `pg`: a plain `pg` pool, the statement named (the ceilings' way);
 * - `service`: `pageGroupsOfUser` on a knex handle configured as the service configures it
 *   (DATABASE_TIMEOUT_MS 3000: pg's per-statement read timeout and the connection wrappers of
 *   src/db/knex.ts, the server-side statement_timeout);
 * - `service, no limits`: the same on a handle without those limits;
 * - `service pool, straight to pg`: the service's pool, the statement sent on the pooled pg
 *   connection itself, without knex's query runner.
 * The variants take turns for `--rounds` rounds (this machine's speed drifts by a third from one
 * minute to the next); the table gives each one's median. `--async-hooks` first turns on the
 * promise hooks an AsyncLocalStorage needs, as oidc-provider does in the service on its first
 * request.
 *
 *   npx tsx bench/sql-statement.ts --database-url postgres://postgres@127.0.0.1:5432/test [--async-hooks]
 */
const { values } = parseArgs({
  options: {
    'database-url': { type: 'string' },
    statements: { type: 'string', default: '20000' },
    callers: { type: 'string', default: '50' },
    rounds: { type: 'string', default: '3' },
    'async-hooks': { type: 'boolean', default: false },
  },
});
const serverUrl = values['database-url'] ?? process.env.BENCH_DATABASE_URL;
const positive = (value: string | undefined) => Number.isInteger(Number(value)) && Number(value) > 0;
if (!serverUrl?.startsWith('postgres') || !positive(values.callers) || !positive(values.statements) || !positive(values.rounds)) {
  process.stderr.write('usage: npx tsx bench/sql-statement.ts --database-url postgres://… [--callers 50] [--statements 20000] [--rounds 3] [--async-hooks]\n');
  process.exit(2);
}
const CALLERS = Number(values.callers);
const POOL = 10;
const perCaller = Math.ceil(Number(values.statements) / CALLERS);

if (values['async-hooks']) new AsyncLocalStorage().run({}, () => {});

const bench = await createBenchDatabase('postgres', serverUrl);
try {
  const { apiUser } = await seed(bench.db, { groups: 100, memberOf: 20, flowUsers: { real: 0, noKdf: 0 } });
  const apiUserId = apiUser.id;
  // The statement and its values exactly as knex sends them for the service.
  let sent: { sql: string; bindings: unknown[] } | undefined;
  bench.db.on('query', (q: { sql: string; bindings: unknown[] }) => (sent ??= q));
  await pageGroupsOfUser(bench.db, apiUserId, { limit: 20, offset: 0 });
  if (!sent) throw new Error('knex sent no statement');
  const statement = { name: 'groups_page', text: sent.sql, values: sent.bindings };

  const limited = createDb(bench.url, undefined, { timeoutMs: 3000 });
  const unlimited = createDb(bench.url);
  const pool = new pg.Pool({ connectionString: bench.url, max: POOL });
  try {
    const straight = async (db: Knex) => {
      const conn = (await db.client.acquireConnection()) as pg.PoolClient;
      try {
        return await conn.query(statement);
      } finally {
        await db.client.releaseConnection(conn);
      }
    };
    const variants: Array<[string, () => Promise<unknown>]> = [
      ['pg', () => pool.query(statement)],
      ['service', () => pageGroupsOfUser(limited, apiUserId, { limit: 20, offset: 0 })],
      ['service, no limits', () => pageGroupsOfUser(unlimited, apiUserId, { limit: 20, offset: 0 })],
      ['service pool, straight to pg', () => straight(limited)],
    ];

    const measure = async (send: () => Promise<unknown>, count: number) => {
      const caller = async () => {
        for (let i = 0; i < count; i += 1) await send();
      };
      const cpu = process.cpuUsage();
      const started = performance.now();
      await Promise.all(Array.from({ length: CALLERS }, caller));
      const used = process.cpuUsage(cpu);
      const n = CALLERS * count;
      return { perSecond: n / ((performance.now() - started) / 1000), cpuMicros: (used.user + used.system) / n };
    };

    const results = new Map<string, Array<{ perSecond: number; cpuMicros: number }>>(variants.map(([name]) => [name, []]));
    for (let round = 0; round < Number(values.rounds); round += 1) {
      for (const [name, send] of variants) {
        await measure(send, Math.ceil(perCaller / 5)); // warm-up
        results.get(name)!.push(await measure(send, perCaller));
      }
    }
    console.log(`${CALLERS} callers, a pool of ${POOL}, ${CALLERS * perCaller} statements a run, ${values.rounds} rounds${values['async-hooks'] ? ', promise hooks on' : ''}; medians`);
    console.log('| how the statement is sent | statements/s | CPU µs each (user + system) |');
    console.log('|---|---:|---:|');
    for (const [name, runs] of results) {
      console.log(`| ${name} | ${fmt(median(runs.map((r) => r.perSecond)))} | ${fmt(median(runs.map((r) => r.cpuMicros)))} |`);
    }
  } finally {
    await Promise.all([limited.destroy(), unlimited.destroy(), pool.end()]);
  }
} finally {
  await bench.drop();
}
