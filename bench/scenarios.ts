import { Redis } from 'ioredis';
import { digest } from '../src/tokens.js';
import { RAW_CLIENT } from './ceilings.js';
import { createBenchDatabase, growGroups, loadLiveTokens, seed, type BenchDatabase, type Seed } from './fixtures.js';
import {
  ourCodeMinter,
  ourExchange,
  ourExchangePath,
  ourExchangeTokens,
  ourRefresh,
  ourSignIn,
  ourWholeFlow,
  rawCodeMinter,
  rawExchangeBody,
  rawExchangeHeaders,
  rawWholeFlow,
  type CodeMinter,
  type OAuthClient,
} from './flows.js';
import { startFlood, type FloodReport } from './flood.js';
import { measureHttp, measureLoops, type Measurement } from './load.js';
import { send } from './http.js';
import { startTarget, type RunningTarget } from './targets.js';
import type { ServerSpec } from './server.js';

export type Profile = 'sqlite' | 'postgres+redis';

/** Every scenario by the name `--scenarios` takes. */
export const CEILINGS = ['ceiling-koa', 'ceiling-io', 'ceiling-io-page', 'ceiling-oidc-exchange', 'ceiling-oidc-flow'] as const;
export const OURS = ['api-ho', 'api-ho-repeat', 'api-ha', 'exchange', 'refresh', 'flood-api-ho', 'flood-exchange', 'sign-in', 'flow', 'flow-no-kdf', 'growth-groups', 'growth-tokens'] as const;
export type ScenarioName = (typeof CEILINGS)[number] | (typeof OURS)[number];

/** The ceiling each of ours is compared with. */
export const CEILING_OF: Partial<Record<ScenarioName, ScenarioName>> = {
  'api-ho': 'ceiling-io',
  'api-ho-repeat': 'ceiling-io',
  'api-ha': 'ceiling-io',
  'growth-groups': 'ceiling-io',
  exchange: 'ceiling-oidc-exchange',
  refresh: 'ceiling-oidc-exchange',
  'flood-api-ho': 'ceiling-io',
  'flood-exchange': 'ceiling-oidc-exchange',
  'growth-tokens': 'ceiling-oidc-exchange',
  flow: 'ceiling-oidc-flow',
  'flow-no-kdf': 'ceiling-oidc-flow',
};

export interface Settings {
  connections: number;
  warmupSeconds: number;
  seconds: number;
  /** Codes for the exchange warm-up; the measured run gets as many as it needs for `seconds`. */
  warmupCodes: number;
  /** API traffic the service serves, unmeasured, before its first measurement. */
  serviceWarmupSeconds: number;
  growth: { groups: number; tokens: number };
  baseGroups: number;
  memberOf: number;
  logLevel: string;
  logDir: string;
  cpuProfileDir?: string;
  /** `--count-round-trips`: the service counts its Redis commands and SQL statements (bench/server.ts). */
  countCalls: boolean;
  databaseUrl?: string;
  /** Already pointing at the bench's own Redis database number. */
  redisUrl?: string;
  selected: (name: ScenarioName) => boolean;
  say: (line: string) => void;
}

export interface Row {
  profile: 'ceiling' | Profile;
  scenario: ScenarioName;
  label: string;
  unit: 'req/s' | 'exchanges/s' | 'refreshes/s' | 'sign-ins/s' | 'flows/s';
  m: Measurement;
  rssMB: number;
  heapMB: number;
  note?: string;
}

const MB = 1024 * 1024;

async function record(
  rows: Row[],
  target: RunningTarget,
  row: Omit<Row, 'rssMB' | 'heapMB'>,
  say: (line: string) => void,
): Promise<Row> {
  const memory = await target.memory();
  const full: Row = { ...row, rssMB: memory.rss / MB, heapMB: memory.heapUsed / MB };
  rows.push(full);
  say(
    `  ${full.profile} ${full.scenario}: ${full.m.rate.toFixed(1)} ${full.unit}, p50 ${full.m.p50.toFixed(1)} ms, p99 ${full.m.p99.toFixed(1)} ms, ` +
      `${full.m.errors} errors, ${full.m.cpuMicros === undefined ? '' : `server CPU ${full.m.cpuMicros.toFixed(0)} µs each, `}RSS ${full.rssMB.toFixed(0)} MB${full.note ? ` (${full.note})` : ''}`,
  );
  return full;
}

/**
 * Exchanges at a rate that cannot be known before: a warm-up on `warmupCodes` codes gives the
 * rate, then enough codes for `seconds` at that rate are minted (through the flow, before the
 * clock starts) and exchanged with a fixed request count.
 */
async function measureExchanges(
  settings: Settings,
  minter: CodeMinter,
  target: RunningTarget,
  request: { url: string; headers?: Record<string, string>; next: (code: string) => { path: string; body?: string } },
): Promise<{ m: Measurement; codes: number }> {
  const run = async (codes: string[], probes?: Pick<RunningTarget, 'cpu' | 'calls'>) =>
    measureHttp({
      cpu: probes?.cpu,
      calls: settings.countCalls ? probes?.calls : undefined,
      url: request.url,
      method: 'POST',
      headers: request.headers,
      connections: settings.connections,
      warmupSeconds: 0,
      seconds: 0,
      amount: codes.length,
      nextRequest: () => request.next(codes.pop() ?? 'ran-out-of-codes'),
    });
  const warm = await run(await minter.mint(settings.warmupCodes));
  const needed = Math.min(60_000, Math.max(500, Math.ceil(warm.rate * settings.seconds)));
  const codes = await minter.mint(needed);
  return { m: await run(codes, target), codes: needed };
}

// ---- ceilings ---------------------------------------------------------------------------

/**
 * The ceiling servers stay up for the whole run and are measured right before the scenarios of
 * ours they are compared with, profile by profile: on a shared machine, a ratio of two
 * measurements minutes apart would measure the neighbours as much as the code.
 */
export class Ceilings {
  private io: Partial<Record<'io' | 'io-page', RunningTarget>> = {};
  private oidc?: { target: RunningTarget; client: OAuthClient; minter?: CodeMinter };

  constructor(
    private readonly settings: Settings,
    private readonly rows: Row[],
    private readonly ioOptions: { databaseUrl: string; redisUrl: string; userId: number } | undefined,
  ) {}

  private get logFile(): string {
    return `${this.settings.logDir}/ceilings.log`;
  }

  private get base() {
    return { connections: this.settings.connections, warmupSeconds: this.settings.warmupSeconds, seconds: this.settings.seconds };
  }

  /** ceiling-koa, once: what the machine does with no I/O and no app at all. */
  async koa(): Promise<void> {
    if (!this.settings.selected('ceiling-koa')) return;
    const target = await startTarget({ kind: 'koa' }, { logFile: this.logFile, cpuProfileDir: this.settings.cpuProfileDir });
    const m = await measureHttp({ url: `${target.url}/`, ...this.base, cpu: target.cpu });
    await record(this.rows, target, { profile: 'ceiling', scenario: 'ceiling-koa', label: 'bare Koa 3, small JSON body', unit: 'req/s', m }, this.settings.say);
    await target.stop();
  }

  async measure(scenario: 'ceiling-io' | 'ceiling-io-page' | 'ceiling-oidc-exchange' | 'ceiling-oidc-flow', profile: Row['profile']): Promise<void> {
    const { settings } = this;
    if (!settings.selected(scenario)) return;
    if (scenario === 'ceiling-io' || scenario === 'ceiling-io-page') {
      if (!this.ioOptions) {
        settings.say(`  ${scenario} skipped: it needs --database-url and --redis-url`);
        return;
      }
      const kind = scenario === 'ceiling-io' ? 'io' : 'io-page';
      let target = this.io[kind];
      if (!target) {
        const redisKey = 'bench:ceiling-io';
        const redis = new Redis(this.ioOptions.redisUrl);
        await redis.set(redisKey, 'a small value');
        redis.disconnect();
        target = await startTarget({ kind, ...this.ioOptions, redisKey }, { logFile: this.logFile, cpuProfileDir: settings.cpuProfileDir });
        this.io[kind] = target;
      }
      const m = await measureHttp({ url: `${target.url}/`, ...this.base, cpu: target.cpu });
      const label =
        kind === 'io'
          ? 'Koa 3 + 1 Redis GET + 1 PostgreSQL primary-key select'
          : 'the same I/O with the API\'s page query (plain pg) and its 20 groups as JSON';
      const note = kind === 'io' ? undefined : 'not a target: what the payload alone costs';
      await record(this.rows, target, { profile, scenario, label, unit: 'req/s', m, note }, settings.say);
      return;
    }
    if (!this.oidc) {
      const target = await startTarget({ kind: 'oidc' }, { logFile: this.logFile, cpuProfileDir: settings.cpuProfileDir });
      this.oidc = { target, client: { base: target.url, ...RAW_CLIENT } };
    }
    const { target, client } = this.oidc;
    if (scenario === 'ceiling-oidc-exchange') {
      this.oidc.minter ??= await rawCodeMinter(client);
      const { m, codes } = await measureExchanges(settings, this.oidc.minter, target, {
        url: `${target.url}/token`,
        headers: rawExchangeHeaders(client),
        next: (code) => ({ path: '/token', body: rawExchangeBody(client, code) }),
      });
      const label = 'raw oidc-provider, memory adapter: code exchange';
      await record(this.rows, target, { profile, scenario, label, unit: 'exchanges/s', m, note: `${codes} codes minted through the flow beforehand` }, settings.say);
    } else {
      const m = await measureLoops(() => rawWholeFlow(client), { ...this.base, cpu: target.cpu });
      const label = 'raw oidc-provider: whole flow, auto sign-in and consent';
      await record(this.rows, target, { profile, scenario, label, unit: 'flows/s', m, note: '6 requests a flow' }, settings.say);
    }
  }

  /** Raw oidc-provider starts afresh for the next profile: its memory adapter keeps everything it was given. */
  async endProfile(): Promise<void> {
    await this.oidc?.target.stop();
    this.oidc = undefined;
  }

  async stop(): Promise<void> {
    for (const target of Object.values(this.io)) await target.stop();
    await this.endProfile();
  }
}

// ---- the service --------------------------------------------------------------------------

export interface ProfileDatabase {
  database: BenchDatabase;
  seeded: Seed;
}

export async function prepareDatabase(profile: Profile, settings: Settings, flowUsers: { real: number; noKdf: number }): Promise<ProfileDatabase> {
  const database = await createBenchDatabase(profile === 'sqlite' ? 'sqlite' : 'postgres', settings.databaseUrl);
  const seeded = await seed(database.db, { groups: settings.baseGroups, memberOf: settings.memberOf, flowUsers });
  return { database, seeded };
}

async function checkGroupsPage(base: string, token: string, memberOf: number): Promise<void> {
  const reply = await send(new URL('/apis/v2/groups?pageSize=20', base), { headers: { authorization: `Bearer ${token}` } });
  const body = JSON.parse(reply.body) as { data?: { total: number; items: unknown[] } };
  if (reply.status !== 200 || body.data?.total !== memberOf || body.data.items.length !== Math.min(20, memberOf)) {
    throw new Error(`GET /apis/v2/groups is not what the scenario expects: ${reply.status} ${reply.body.slice(0, 200)}`);
  }
}

export async function runProfile(profile: Profile, settings: Settings, rows: Row[], prepared: ProfileDatabase, ceilings: Ceilings): Promise<void> {
  const { say } = settings;
  const { database, seeded } = prepared;
  if (!OURS.some((name) => settings.selected(name))) {
    for (const name of ['ceiling-io', 'ceiling-io-page', 'ceiling-oidc-exchange', 'ceiling-oidc-flow'] as const) await ceilings.measure(name, profile);
    return;
  }
  const spec: ServerSpec = {
    kind: 'idp',
    databaseUrl: database.url,
    redisUrl: profile === 'postgres+redis' ? settings.redisUrl : undefined,
    logLevel: settings.logLevel,
    countCalls: settings.countCalls,
  };
  const target = await startTarget(spec, { logFile: `${settings.logDir}/${profile}.log`, cpuProfileDir: settings.cpuProfileDir });
  const client: OAuthClient = { base: target.url, ...seeded.client };
  const base = {
    connections: settings.connections,
    warmupSeconds: settings.warmupSeconds,
    seconds: settings.seconds,
    cpu: target.cpu,
    calls: settings.countCalls ? target.calls : undefined,
  };
  const row = (r: Omit<Row, 'rssMB' | 'heapMB' | 'profile'>) => record(rows, target, { profile, ...r }, say);
  const redis = spec.redisUrl ? new Redis(spec.redisUrl) : undefined;
  // How many requests one flow (or sign-in) makes, counted by the server on one run of it alone:
  // the divisor of `--count-round-trips` for multi-request work.
  const requestsOf = async (task: () => Promise<void>): Promise<number | undefined> => {
    if (!settings.countCalls) return undefined;
    const before = (await target.calls())['http requests'] ?? 0;
    await task();
    return ((await target.calls())['http requests'] ?? 0) - before;
  };

  try {
    // The API user signs in once (a real Argon2id verification) and consents: the first code gives
    // the ho_ token of the API scenarios; the same session mints the exchange scenarios' codes.
    const minter = await ourCodeMinter(client, { login: seeded.apiUser.login, password: seeded.apiUser.password });
    const hoToken = await ourExchange(client, minter.first);
    await checkGroupsPage(target.url, hoToken, settings.memberOf);
    await checkGroupsPage(target.url, seeded.haToken, settings.memberOf);
    const api = (token: string) => ({ url: `${target.url}/apis/v2/groups?pageSize=20`, headers: { authorization: `Bearer ${token}` }, ...base });
    const groupsNote = () => `${seeded.groups.toLocaleString('en-US')} groups, member of ${settings.memberOf}, pageSize 20`;

    // The service is a large program under a JIT: it serves its API for a while before any
    // measurement (not counted), as a server in production would have.
    if ((['api-ho', 'api-ho-repeat', 'api-ha', 'growth-groups'] as const).some((name) => settings.selected(name))) {
      await measureHttp({ ...api(hoToken), warmupSeconds: 0, seconds: settings.serviceWarmupSeconds });
    }

    await ceilings.measure('ceiling-io', profile);
    await ceilings.measure('ceiling-io-page', profile);
    if (settings.selected('api-ho')) {
      await row({ scenario: 'api-ho', label: 'GET /apis/v2/groups, ho_ token', unit: 'req/s', m: await measureHttp(api(hoToken)), note: groupsNote() });
    }
    if (settings.selected('api-ho-repeat')) {
      await row({ scenario: 'api-ho-repeat', label: 'the same, run again (memory)', unit: 'req/s', m: await measureHttp(api(hoToken)), note: groupsNote() });
    }
    if (settings.selected('api-ha')) {
      await row({ scenario: 'api-ha', label: 'GET /apis/v2/groups, ha_ token', unit: 'req/s', m: await measureHttp(api(seeded.haToken)), note: groupsNote() });
    }

    const exchange = async (scenario: 'exchange' | 'growth-tokens', label: string, liveNote: string) => {
      const { m, codes } = await measureExchanges(settings, minter, target, {
        url: target.url,
        next: (code) => ({ path: ourExchangePath(client, code) }),
      });
      await row({ scenario, label, unit: 'exchanges/s', m, note: `${liveNote}; ${codes} codes minted through the flow beforehand` });
    };
    await ceilings.measure('ceiling-oidc-exchange', profile);
    if (settings.selected('exchange')) {
      const live = redis ? `${await countKeys(redis, 'idp:AccessToken:*')} live access tokens in Redis at start` : 'SQL storage';
      await exchange('exchange', 'code exchange, seed query-string parameters', live);
    }

    // Right after the exchange it is compared with, so that nothing else runs between the two.
    if (settings.selected('growth-tokens') && redis) {
      say(`  loading ${settings.growth.tokens.toLocaleString('en-US')} live access tokens into Redis…`);
      const template = await redis.hget(`idp:AccessToken:${digest(hoToken)}`, 'payload');
      if (!template) throw new Error('no stored access token to copy the layout of');
      const before = await countKeys(redis, 'idp:AccessToken:*');
      await loadLiveTokens(redis, { keyPrefix: 'idp:', count: settings.growth.tokens, template });
      await exchange('growth-tokens', `code exchange, ${shortCount(settings.growth.tokens)} live tokens`, `${(before + settings.growth.tokens).toLocaleString('en-US')} live access tokens in Redis at start`);
    }

    // Refresh-token grants with rotation: a pool of refresh tokens as large as the loops (and a
    // few more), each loop taking one, refreshing it and putting back the one it got.
    if (settings.selected('refresh')) {
      const codes = await minter.mint(settings.connections + 16);
      const pool: string[] = [];
      for (const code of codes) pool.push((await ourExchangeTokens(client, code)).refresh);
      const refreshOnce = async () => {
        const token = pool.shift();
        if (!token) throw new Error('out of refresh tokens');
        pool.push(await ourRefresh(client, token));
      };
      await row({
        scenario: 'refresh',
        label: 'refresh-token grant, rotated (query-string parameters)',
        unit: 'refreshes/s',
        m: await measureLoops(refreshOnce, base),
        note: `${settings.connections} loops, each refreshing the token it got last; the same grant and client as \`exchange\``,
      });
    }

    // Beside a flood of wrong-password sign-ins (as many connections as the measured load): how
    // much of the API's and the exchange's rate the bounded KDF queue keeps.
    if (settings.selected('flood-api-ho') || settings.selected('flood-exchange')) {
      const flood = startFlood(target.url, settings.connections);
      const floodNote = (report: FloodReport) => {
        const statuses = Object.entries(report.byStatus).map(([status, n]) => `${n} × ${status}`).join(', ');
        return `beside ${settings.connections} connections of wrong-password sign-ins: ${fmtRate(report.attempts / report.seconds)}/s (${statuses}), sign-in p99 ${report.p99.toFixed(0)} ms`;
      };
      try {
        await new Promise((resolve) => setTimeout(resolve, settings.warmupSeconds * 1000));
        const apiUnderFlood = settings.selected('flood-api-ho') ? await measureHttp(api(hoToken)) : undefined;
        const exchangeUnderFlood = settings.selected('flood-exchange')
          ? await measureExchanges(settings, minter, target, { url: target.url, next: (code) => ({ path: ourExchangePath(client, code) }) })
          : undefined;
        const report = await flood.stop();
        if (apiUnderFlood) await row({ scenario: 'flood-api-ho', label: 'GET /apis/v2/groups, ho_ token, under a sign-in flood', unit: 'req/s', m: apiUnderFlood, note: floodNote(report) });
        if (exchangeUnderFlood) await row({ scenario: 'flood-exchange', label: 'code exchange, under a sign-in flood', unit: 'exchanges/s', m: exchangeUnderFlood.m, note: floodNote(report) });
      } finally {
        await flood.stop();
      }
    }

    let users = { real: 0, noKdf: 0 };
    const flow = (kind: 'real' | 'noKdf') => () => {
      const login = seeded.flowUsers[kind][users[kind]];
      users = { ...users, [kind]: users[kind] + 1 };
      if (!login) return Promise.reject(new Error(`out of ${kind} flow users: raise their number in bench/run.ts`));
      return ourWholeFlow(client, { login, password: seeded.apiUser.password }).then(() => undefined);
    };
    await ceilings.measure('ceiling-oidc-flow', profile);
    if (settings.selected('sign-in')) {
      // Users may sign in again and again: the flow users, round and round.
      let next = 0;
      const signIn = () => {
        const login = seeded.flowUsers.real[next % seeded.flowUsers.real.length]!;
        next += 1;
        return ourSignIn(client, { login, password: seeded.apiUser.password });
      };
      await row({
        scenario: 'sign-in',
        label: 'password sign-in through the form (Argon2id)',
        unit: 'sign-ins/s',
        m: await measureLoops(signIn, { ...base, requestsEach: await requestsOf(signIn) }),
        note: 'fresh browser: authorize → sign-in page → POST /login → redirect to consent (not followed), 3 requests',
      });
    }
    if (settings.selected('flow')) {
      await row({ scenario: 'flow', label: 'whole flow (Argon2id sign-in)', unit: 'flows/s', m: await measureLoops(flow('real'), { ...base, requestsEach: await requestsOf(flow('real')) }), note: 'authorize → sign-in → consent → exchange, 8 requests, fresh user and browser each' });
    }
    if (settings.selected('flow-no-kdf')) {
      await row({ scenario: 'flow-no-kdf', label: 'whole flow, KDF made negligible (not a target)', unit: 'flows/s', m: await measureLoops(flow('noKdf'), { ...base, requestsEach: await requestsOf(flow('noKdf')) }), note: 'users whose stored hash is Argon2id with m = 8 KiB, t = 1: the flow cost without the KDF' });
    }

    if (settings.selected('growth-groups')) {
      say(`  growing to ${settings.growth.groups.toLocaleString('en-US')} groups…`);
      await growGroups(database.db, seeded, settings.growth.groups, settings.memberOf);
      await checkGroupsPage(target.url, hoToken, settings.memberOf);
      await row({ scenario: 'growth-groups', label: `GET /apis/v2/groups, ho_, ${shortCount(settings.growth.groups)} groups`, unit: 'req/s', m: await measureHttp(api(hoToken)), note: groupsNote() });
    }

  } finally {
    redis?.disconnect();
    await target.stop();
  }
}

function fmtRate(n: number): string {
  return n < 100 ? n.toFixed(1) : n.toFixed(0);
}

function shortCount(n: number): string {
  return n >= 1_000_000 ? `${n / 1_000_000}M` : n >= 1000 ? `${n / 1000}k` : String(n);
}

async function countKeys(redis: Redis, pattern: string): Promise<number> {
  let cursor = '0';
  let count = 0;
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 10_000);
    cursor = next;
    count += keys.length;
  } while (cursor !== '0');
  return count;
}
