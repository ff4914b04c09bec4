import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { ROOT } from '../src/paths.js';
import { createBenchDatabase, REDIRECT_URI, seed, type Seed } from './fixtures.js';
import { authorizeToCode, ourAuthorizePath, ourExchangePath, signInAndConsent, type OAuthClient } from './flows.js';
import { Browser, send, type Reply } from './http.js';
import { RoundRobinProxy, type Backend } from './proxy.js';
import { fmt, mark, ms } from './report.js';
import { percentile } from './stats.js';

/**
 * `npm run bench -- --soak`: two instances of the real service (`node dist/src/index.js`, one
 * PostgreSQL database, one Redis database) behind a round-robin proxy, under mixed traffic for
 * some minutes, while every `restartEverySeconds` one of them (in turn) gets SIGTERM and, once it
 * has exited, is started again on the same port. It counts what a client would see: every answer
 * that is not the one expected, every connection error, and 503s with Retry-After apart.
 */
export interface SoakOptions {
  databaseUrl: string;
  /** Already pointing at the bench's own Redis database number. */
  redisUrl: string;
  minutes: number;
  restartEverySeconds: number;
  loops: number;
  logLevel: string;
  logDir: string;
  say: (line: string) => void;
}

const COMPILED = import.meta.url.endsWith('.js');
const ENTRY = COMPILED ? [join(ROOT, 'dist/src/index.js')] : ['--import', 'tsx', join(ROOT, 'src/index.ts')];
const MB = 1024 * 1024;
const RSS_EVERY_MS = 10_000;

type Kind = 'flow-step' | 'exchange' | 'refresh' | 'api-user' | 'api-groups';
const KINDS: Kind[] = ['flow-step', 'exchange', 'refresh', 'api-user', 'api-groups'];
const KIND_LABEL: Record<Kind, string> = {
  'flow-step': 'flow pages (authorize, sign-in, consent, redirects)',
  exchange: 'code exchange',
  refresh: 'refresh-token grant',
  'api-user': 'GET /apis/v2/user (ho_)',
  'api-groups': 'GET /apis/v2/groups (ho_)',
};

interface Failure {
  atS: number;
  kind: Kind;
  what: string;
}

/** Every request of the soak, by kind: latencies of answered requests, and what went wrong. */
class Tally {
  readonly latencies = new Map<Kind, number[]>(KINDS.map((k) => [k, []]));
  readonly ok = new Map<Kind, number>(KINDS.map((k) => [k, 0]));
  readonly busy = new Map<Kind, number>(KINDS.map((k) => [k, 0]));
  readonly failed = new Map<Kind, number>(KINDS.map((k) => [k, 0]));
  readonly failures: Failure[] = [];
  readonly flows: number[] = [];
  flowsAbandoned = 0;

  constructor(private readonly t0: number) {}

  /** `expected` says whether the answer is the one this kind of request should get. */
  async time(kind: Kind, request: () => Promise<Reply>, expected: (r: Reply) => boolean): Promise<Reply> {
    const began = performance.now();
    let reply: Reply;
    try {
      reply = await request();
    } catch (err) {
      this.fail(kind, `connection: ${(err as Error).message}`);
      throw err;
    }
    this.latencies.get(kind)!.push(performance.now() - began);
    if (expected(reply)) this.ok.set(kind, this.ok.get(kind)! + 1);
    else if (reply.status === 503 && reply.retryAfter !== undefined) this.busy.set(kind, this.busy.get(kind)! + 1);
    else this.fail(kind, `${reply.status} from ${String(reply.headers['x-soak-backend'] ?? '?')}: ${reply.body.slice(0, 160).replace(/\s+/g, ' ')}`);
    return reply;
  }

  private fail(kind: Kind, what: string): void {
    this.failed.set(kind, this.failed.get(kind)! + 1);
    this.failures.push({ atS: (Date.now() - this.t0) / 1000, kind, what });
  }
}

/** A browser whose every request is counted; the issuer's https:// URLs (the proxy plays TLS terminator) go to the proxy. */
class CountedBrowser extends Browser {
  /** The process (`x-soak-backend`) whose redirect carried the code to the callback. */
  callbackBy = '';

  constructor(
    base: string,
    private readonly issuer: string,
    private readonly tally: Tally,
  ) {
    super(base);
  }

  override request(path: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Reply> {
    const local = path.startsWith(this.issuer) ? path.slice(this.issuer.length) || '/' : path;
    return this.tally
      .time('flow-step', () => super.request(local, init), (r) => r.status === 200 || r.status === 302 || r.status === 303)
      .then((reply) => {
        if (reply.location?.startsWith(REDIRECT_URI)) this.callbackBy = String(reply.headers['x-soak-backend'] ?? '');
        return reply;
      });
  }
}

/** A port the system picks, kept for an instance across its restarts. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function rssOf(pid: number): number | undefined {
  try {
    const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb ? Number(kb) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

interface Restart {
  atS: number;
  instance: string;
  exitCode: number | null;
  signal: string | null;
  drainMs: number;
  readyAfterMs: number;
}

/** One instance: a process of the service at a fixed port, stopped with SIGTERM and started again. */
class Instance {
  private child?: ChildProcess;
  private exited?: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(
    readonly backend: Backend,
    private readonly env: Record<string, string>,
    private readonly logFile: string,
  ) {}

  get pid(): number | undefined {
    return this.child?.exitCode === null ? this.child.pid : undefined;
  }

  /** Starts a new process and waits until its /readyz answers 200. */
  async start(): Promise<void> {
    const log = openSync(this.logFile, 'a');
    const child = spawn(process.execPath, ['--no-warnings=ExperimentalWarning', ...ENTRY], {
      stdio: ['ignore', log, log],
      env: { ...process.env, ...this.env, PORT: String(this.backend.port) },
    });
    closeSync(log);
    this.child = child;
    this.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    this.backend.generation += 1;
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`instance ${this.backend.name} exited with ${child.exitCode} while starting (see ${this.logFile})`);
      if (Date.now() > deadline) throw new Error(`instance ${this.backend.name} was not ready within 60 s (see ${this.logFile})`);
      const ready = await send(new URL(`http://127.0.0.1:${this.backend.port}/readyz`)).then((r) => r.status === 200, () => false);
      if (ready) return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** SIGTERM, then the time until the process exited, and how. */
  async terminate(): Promise<{ code: number | null; signal: NodeJS.Signals | null; drainMs: number }> {
    const began = performance.now();
    this.child!.kill('SIGTERM');
    const killer = setTimeout(() => this.child?.kill('SIGKILL'), 60_000);
    const how = await this.exited!;
    clearTimeout(killer);
    return { ...how, drainMs: performance.now() - began };
  }

  async stop(): Promise<void> {
    if (this.child && this.child.exitCode === null && this.child.signalCode === null) await this.terminate();
  }
}

interface Tokens {
  access: string;
  refresh: string;
  busy: boolean;
}

interface ParkedCode {
  code: string;
  /** `<instance>:<generation>` of the process that minted it. */
  mintedBy: string;
  dueAt: number;
}

const pick = <T>(items: T[]): T => items[Math.floor(Math.random() * items.length)]!;

export interface SoakResult {
  section: string;
  met: boolean;
}

export async function runSoak(o: SoakOptions): Promise<SoakResult> {
  const { say } = o;
  const redis = new Redis(o.redisUrl);
  say('soak: preparing the PostgreSQL database…');
  const database = await createBenchDatabase('postgres', o.databaseUrl);
  const flowUsers = { real: 1500, noKdf: 3000 };
  let seeded: Seed;
  const instances: Instance[] = [];
  let proxy: RoundRobinProxy | undefined;
  try {
    seeded = await seed(database.db, { groups: 100, memberOf: 20, flowUsers });
    const backends: Backend[] = [
      { name: 'A', port: await freePort(), state: 'down', generation: 0 },
      { name: 'B', port: await freePort(), state: 'down', generation: 0 },
    ];
    proxy = new RoundRobinProxy(backends);
    const base = await proxy.listen();
    // The proxy is the issuer's address; the instances believe it is https (NODE_ENV=production
    // requires it), as behind a TLS-terminating load balancer.
    const issuer = base.replace(/^http:/, 'https:');
    const env = {
      NODE_ENV: 'production',
      HOST: '127.0.0.1',
      ISSUER: issuer,
      DATABASE_URL: database.url,
      REDIS_URL: o.redisUrl,
      KEYS_SECRET: randomBytes(32).toString('base64'),
      LOG_LEVEL: o.logLevel,
      MAIL_DIR: join(o.logDir, 'mail'),
      // As in the other scenarios: a few tokens make all the API calls; the limit is counted, never reached.
      RATE_LIMIT_API_TOKEN: '999999999/1h',
    };
    for (const backend of backends) {
      const instance = new Instance(backend, env, join(o.logDir, `soak-${backend.name}.log`));
      // One after the other: the first runs the migrations and makes the keys.
      await instance.start();
      instances.push(instance);
    }
    await proxy.checkAll();
    say(`soak: instances A (port ${backends[0]!.port}) and B (port ${backends[1]!.port}) behind ${base}; ${o.loops} loops for ${o.minutes} min, a restart every ${o.restartEverySeconds} s`);

    const t0 = Date.now();
    const endAt = t0 + o.minutes * 60_000;
    const tally = new Tally(t0);
    const client: OAuthClient = { base, ...seeded.client };
    const basic = `Basic ${Buffer.from(`${encodeURIComponent(client.clientId)}:${encodeURIComponent(client.clientSecret)}`).toString('base64')}`;
    const tokens: Tokens[] = [];
    const parked: ParkedCode[] = [];
    const crossRestart = { redeemed: 0, failed: 0, otherInstance: 0 };
    const generationOf = (name: string) => backends.find((b) => b.name === name)!.generation;
    let nextUser = 0;

    const keepTokens = (t: { access_token?: string; refresh_token?: string }, replace?: Tokens) => {
      if (!t.access_token || !t.refresh_token) return;
      if (replace) {
        replace.access = t.access_token;
        replace.refresh = t.refresh_token;
      } else if (tokens.length < 200) tokens.push({ access: t.access_token, refresh: t.refresh_token, busy: false });
      else Object.assign(pick(tokens.filter((x) => !x.busy)) ?? {}, { access: t.access_token, refresh: t.refresh_token });
    };

    const exchange = async (c: ParkedCode) => {
      const reply = await tally.time(
        'exchange',
        () => send(new URL(ourExchangePath(client, c.code), base), { method: 'POST' }),
        (r) => r.status === 200 && (JSON.parse(r.body) as { access_token?: string }).access_token?.startsWith('ho_') === true,
      );
      const [name, generation] = c.mintedBy.split(':') as [string, string];
      const answeredBy = String(reply.headers['x-soak-backend'] ?? '');
      // Minted by a process that has been stopped since: redeemed from the shared stores only.
      if (generationOf(name) > Number(generation)) {
        if (reply.status === 200) crossRestart.redeemed += 1;
        else crossRestart.failed += 1;
      }
      if (reply.status === 200 && !answeredBy.startsWith(`${name}:`)) crossRestart.otherInstance += 1;
      if (reply.status === 200) keepTokens(JSON.parse(reply.body) as { access_token?: string; refresh_token?: string });
    };

    const flow = async () => {
      const i = nextUser;
      nextUser += 1;
      // Every other flow signs in with a real Argon2id verification, the others with the cheap hash.
      const pool = i % 2 === 0 ? seeded.flowUsers.real : seeded.flowUsers.noKdf;
      const login = { login: pool[Math.floor(i / 2) % pool.length]!, password: seeded.apiUser.password };
      const browser = new CountedBrowser(base, issuer, tally);
      const began = performance.now();
      let code: string;
      try {
        code = await authorizeToCode(browser, ourAuthorizePath(client), client.redirectUri, signInAndConsent(login));
      } catch {
        tally.flowsAbandoned += 1;
        return;
      }
      tally.flows.push(performance.now() - began);
      // Half the codes are exchanged at once; the others wait (within the code's 10 minutes), so
      // that many are redeemed after the process that minted them has been restarted.
      const c: ParkedCode = { code, mintedBy: browser.callbackBy, dueAt: Date.now() };
      if (Math.random() < 0.5 && tokens.length > 4) {
        c.dueAt += (5 + Math.random() * Math.min(480, o.restartEverySeconds * 1.5)) * 1000;
        parked.push(c);
      } else {
        await exchange(c);
      }
    };

    const refresh = async () => {
      const t = pick(tokens.filter((x) => !x.busy));
      if (!t) return flow();
      t.busy = true;
      try {
        const reply = await tally.time(
          'refresh',
          () =>
            send(new URL('/login/oauth/access_token', base), {
              method: 'POST',
              headers: { authorization: basic, 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
              body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: t.refresh }).toString(),
            }),
          (r) => r.status === 200 && (JSON.parse(r.body) as { refresh_token?: string }).refresh_token?.startsWith('hr_') === true,
        );
        if (reply.status === 200) keepTokens(JSON.parse(reply.body) as { access_token?: string; refresh_token?: string }, t);
      } finally {
        t.busy = false;
      }
    };

    const api = async (kind: 'api-user' | 'api-groups') => {
      const t = pick(tokens);
      if (!t) return flow();
      const path = kind === 'api-user' ? '/apis/v2/user' : '/apis/v2/groups?pageSize=20';
      await tally.time(kind, () => send(new URL(path, base), { headers: { authorization: `Bearer ${t.access}` } }), (r) => r.status === 200);
    };

    const loop = async () => {
      while (Date.now() < endAt) {
        try {
          const due = parked.findIndex((c) => c.dueAt <= Date.now());
          if (due !== -1) {
            await exchange(parked.splice(due, 1)[0]!);
            continue;
          }
          const r = Math.random();
          if (r < 0.2 || tokens.length < 4) await flow();
          else if (r < 0.35) await refresh();
          else if (r < 0.65) await api('api-user');
          else await api('api-groups');
        } catch {
          // Counted where it happened; do not spin on a failing proxy.
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      }
    };

    // RSS of each instance every 10 s, and the machine's load.
    const rss: Array<{ atS: number; instance: string; generation: number; rss: number }> = [];
    const loads: number[] = [];
    const sample = () => {
      for (const instance of instances) {
        const pid = instance.pid;
        const value = pid ? rssOf(pid) : undefined;
        if (value !== undefined) rss.push({ atS: (Date.now() - t0) / 1000, instance: instance.backend.name, generation: instance.backend.generation, rss: value });
      }
      loads.push(os.loadavg()[0]!);
    };
    sample();
    const sampler = setInterval(sample, RSS_EVERY_MS);

    const restarts: Restart[] = [];
    const restarter = (async () => {
      for (let n = 1; ; n += 1) {
        const at = t0 + n * o.restartEverySeconds * 1000;
        if (at >= endAt - 5000) return;
        await new Promise((resolve) => setTimeout(resolve, at - Date.now()));
        const instance = instances[(n - 1) % instances.length]!;
        const atS = (Date.now() - t0) / 1000;
        const how = await instance.terminate();
        const began = performance.now();
        await instance.start();
        const restart = { atS, instance: instance.backend.name, exitCode: how.code, signal: how.signal, drainMs: how.drainMs, readyAfterMs: performance.now() - began };
        restarts.push(restart);
        say(`  restart ${n}: ${restart.instance} SIGTERM at ${atS.toFixed(0)} s, exit ${how.code ?? how.signal} after ${how.drainMs.toFixed(0)} ms, ready again ${restart.readyAfterMs.toFixed(0)} ms later`);
      }
    })();
    const progress = setInterval(() => {
      const total = KINDS.reduce((s, k) => s + tally.latencies.get(k)!.length, 0);
      const failed = KINDS.reduce((s, k) => s + tally.failed.get(k)!, 0);
      say(`  ${((Date.now() - t0) / 60_000).toFixed(1)} min: ${total} requests, ${failed} failed, ${tally.flows.length} flows, ${parked.length} codes waiting`);
    }, 60_000);

    await Promise.all([...Array.from({ length: o.loops }, loop), restarter]);
    clearInterval(progress);
    // Codes still waiting are redeemed now (all well within their 10 minutes).
    const left = parked.splice(0);
    await Promise.all(left.map((c) => exchange(c).catch(() => {})));
    sample();
    clearInterval(sampler);
    const elapsedS = (Date.now() - t0) / 1000;

    return report({ o, tally, restarts, rss, loads, crossRestart, leftAtEnd: left.length, stats: proxy.stats, elapsedS });
  } finally {
    await proxy?.close();
    for (const instance of instances) await instance.stop().catch(() => {});
    await database.drop().catch(() => {});
    await redis.flushdb().catch(() => {});
    redis.disconnect();
  }
}

function report(r: {
  o: SoakOptions;
  tally: Tally;
  restarts: Restart[];
  rss: Array<{ atS: number; instance: string; generation: number; rss: number }>;
  loads: number[];
  crossRestart: { redeemed: number; failed: number; otherInstance: number };
  leftAtEnd: number;
  stats: RoundRobinProxy['stats'];
  elapsedS: number;
}): SoakResult {
  const { tally } = r;
  const rows: string[] = ['| kind | requests | expected answer | 503 + Retry-After | failed | p50 ms | p99 ms |', '|---|--:|--:|--:|--:|--:|--:|'];
  const all: number[] = [];
  let totals = { n: 0, ok: 0, busy: 0, failed: 0 };
  for (const kind of KINDS) {
    const lat = [...tally.latencies.get(kind)!].sort((a, b) => a - b);
    all.push(...lat);
    const failed = tally.failed.get(kind)!;
    const n = lat.length + tally.failures.filter((f) => f.kind === kind && f.what.startsWith('connection')).length;
    totals = { n: totals.n + n, ok: totals.ok + tally.ok.get(kind)!, busy: totals.busy + tally.busy.get(kind)!, failed: totals.failed + failed };
    rows.push(`| ${KIND_LABEL[kind]} | ${fmt(n)} | ${fmt(tally.ok.get(kind)!)} | ${fmt(tally.busy.get(kind)!)} | ${fmt(failed)} | ${ms(percentile(lat, 50))} | ${ms(percentile(lat, 99))} |`);
  }
  all.sort((a, b) => a - b);
  rows.push(`| **all requests** | ${fmt(totals.n)} | ${fmt(totals.ok)} | ${fmt(totals.busy)} | ${fmt(totals.failed)} | ${ms(percentile(all, 50))} | ${ms(percentile(all, 99))} |`);
  const flows = [...tally.flows].sort((a, b) => a - b);
  rows.push(`| whole flows to the code (not requests) | ${fmt(flows.length + tally.flowsAbandoned)} | ${fmt(flows.length)} | | ${fmt(tally.flowsAbandoned)} abandoned | ${ms(percentile(flows, 50))} | ${ms(percentile(flows, 99))} |`);

  const restartRows = [
    '| # | at | instance | exit code | SIGTERM → exit (drain) | new process ready after |',
    '|--:|--:|---|--:|--:|--:|',
    ...r.restarts.map((x, i) => `| ${i + 1} | ${fmt(x.atS)} s | ${x.instance} | ${x.exitCode ?? `signal ${x.signal}`} | ${fmt(x.drainMs)} ms | ${fmt(x.readyAfterMs)} ms |`),
  ];

  // RSS per minute: the mean of each instance's samples in that minute (the sample taken after
  // the last codes were redeemed counts in the last minute).
  const minutes = Math.max(1, Math.ceil(r.o.minutes));
  const minuteOf = (atS: number) => Math.min(minutes, Math.floor(atS / 60) + 1);
  const perMinute = (instance: string, minute: number) => {
    const xs = r.rss.filter((s) => s.instance === instance && minuteOf(s.atS) === minute);
    return xs.length ? { mb: xs.reduce((s, x) => s + x.rss, 0) / xs.length / MB, gens: [...new Set(xs.map((x) => x.generation))] } : undefined;
  };
  // The deployment's RSS: both instances together. With a restart every two minutes no process
  // lives from the second minute to the last, so flatness is judged across restarts, as an
  // operator watching the machines sees it; each process's own column shows where it moved.
  const both = (m: number) => {
    const a = perMinute('A', m);
    const b = perMinute('B', m);
    return a && b ? a.mb + b.mb : undefined;
  };
  const rssRows = ['| minute | A: RSS MB (process) | B: RSS MB (process) | both, MB |', '|--:|--:|--:|--:|'];
  for (let m = 1; m <= minutes; m += 1) {
    const cell = (name: string) => {
      const v = perMinute(name, m);
      return v ? `${fmt(v.mb)} (#${v.gens.join(', #')})` : '—';
    };
    const sum = both(m);
    rssRows.push(`| ${m} | ${cell('A')} | ${cell('B')} | ${sum === undefined ? '—' : fmt(sum)} |`);
  }
  const lastFull = Math.max(2, minutes);
  const second = both(2);
  const last = both(lastFull);
  const ratio = second !== undefined && last !== undefined ? last / second : undefined;
  const flat = { second, last, ratio, met: ratio === undefined ? undefined : Math.abs(ratio - 1) <= 0.1 };

  const failedTotal = totals.failed;
  const exitsOk = r.restarts.length > 0 && r.restarts.every((x) => x.exitCode === 0);
  const verdicts: Array<{ target: string; measured: string; met: boolean | undefined }> = [
    {
      target: '0 failed requests (503 with Retry-After counted apart)',
      measured: `${fmt(failedTotal)} failed of ${fmt(totals.n)}; ${fmt(totals.busy)} 503 + Retry-After`,
      met: failedTotal === 0,
    },
    {
      target: `RSS of both instances flat: minute ${lastFull} within 10 % of minute 2`,
      measured: flat.ratio !== undefined ? `${fmt(flat.second!)} → ${fmt(flat.last!)} MB (${flat.ratio.toFixed(2)} ×)` : '',
      met: flat.met,
    },
    {
      target: 'every SIGTERM ends in exit 0',
      measured: r.restarts.length ? `${r.restarts.length} restarts, exit codes ${r.restarts.map((x) => x.exitCode ?? x.signal).join(', ')}` : 'no restart',
      met: r.restarts.length ? exitsOk : undefined,
    },
    {
      target: 'codes minted before their instance restarted are redeemed after it',
      measured: `${fmt(r.crossRestart.redeemed)} redeemed, ${fmt(r.crossRestart.failed)} refused`,
      met: r.crossRestart.redeemed + r.crossRestart.failed === 0 ? undefined : r.crossRestart.failed === 0,
    },
  ];
  const met = verdicts.every((v) => v.met !== false);
  const loadAvg = r.loads.length ? r.loads.reduce((s, x) => s + x, 0) / r.loads.length : Number.NaN;
  const failures = tally.failures.slice(0, 15).map((f) => `- ${fmt(f.atS, 1)} s, ${f.kind}: ${f.what}`);
  const section = [
    `Soak: ${r.o.loops} client loops through a round-robin proxy to 2 instances (\`node dist/src/index.js\`, NODE_ENV=production, one PostgreSQL database, one Redis database) for ${fmt(r.elapsedS / 60, 1)} min; one instance (in turn) gets SIGTERM every ${r.o.restartEverySeconds} s and is started again once it has exited. Machine load average (1 min) during the soak: ${fmt(loadAvg, 1)} on ${os.cpus().length} cores (shared with other work). The proxy: ${fmt(r.stats.retriedRefused)} requests sent to the other instance after a refused connection, ${fmt(r.stats.retriedReset)} sent again after a reset kept-alive socket, ${fmt(r.stats.noBackend)} that no instance took. Codes exchanged on the other instance than the one that minted them: ${fmt(r.crossRestart.otherInstance)}; codes still waiting at the end, exchanged then: ${fmt(r.leftAtEnd)}.`,
    '',
    rows.join('\n'),
    '',
    restartRows.join('\n'),
    '',
    rssRows.join('\n'),
    '',
    ['| target | measured | |', '|---|---|---|', ...verdicts.map((v) => `| ${v.target} | ${v.measured || '—'} | ${mark(v.met)} |`)].join('\n'),
    ...(failures.length ? ['', `First failures (${fmt(tally.failures.length)} in all):`, '', ...failures] : []),
  ].join('\n');
  return { section, met };
}
