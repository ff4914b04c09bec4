import autocannon from 'autocannon';
import { percentile } from './stats.js';

/** One measured run: rates are successful requests (or flows) per second. Latencies in ms. */
export interface Measurement {
  rate: number;
  p50: number;
  p99: number;
  errors: number;
  completed: number;
  seconds: number;
  /** CPU time of the server under test per request (or flow) of the measured run, in µs. */
  cpuMicros?: number;
  /** With a `calls` probe: Redis commands and SQL statements per answered request (or flow), by kind. */
  callsEach?: Record<string, number>;
}

/** Reads the server's CPU time so far (µs): taken right before and after the measured run. */
export type CpuProbe = () => Promise<number>;

/** Reads the server's counts of storage calls so far, by kind (bench/server.ts). */
export type CallsProbe = () => Promise<Record<string, number>>;

/**
 * What was counted between two readings, per request (or per flow of `requestsEach` requests):
 * by the server's own count of requests received when it has one, else by those answered.
 */
function callsEach(before: Record<string, number> | undefined, after: Record<string, number> | undefined, answered: number, requestsEach = 1): Record<string, number> | undefined {
  if (!before || !after) return undefined;
  const received = after['http requests'];
  const units = received === undefined ? answered : (received - (before['http requests'] ?? 0)) / requestsEach;
  if (!(units > 0)) return undefined;
  const out: Record<string, number> = {};
  for (const [key, n] of Object.entries(after)) {
    const diff = n - (before[key] ?? 0);
    if (diff > 0) out[key] = diff / units;
  }
  return out;
}

export interface HttpLoad {
  url: string;
  connections: number;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  /** Fixed-length runs: warm-up, then the measured run. */
  warmupSeconds: number;
  seconds: number;
  /**
   * For requests that each consume something (an authorization code): the path and body of the
   * next request, and how many requests the warm-up and the measured run make instead of durations.
   */
  nextRequest?: () => { path: string; body?: string };
  warmupAmount?: number;
  amount?: number;
  cpu?: CpuProbe;
  calls?: CallsProbe;
}

interface Run {
  result: autocannon.Result;
  /** Wall time from the start to the last response: autocannon's own duration of a run with a
   * fixed request count ends at its next 1 s tick, which would understate the rate by up to 20 %. */
  seconds: number;
}

async function cannon(load: HttpLoad, phase: 'warmup' | 'measure'): Promise<Run> {
  const amount = phase === 'warmup' ? load.warmupAmount : load.amount;
  const next = load.nextRequest;
  const started = performance.now();
  let lastResponse = started;
  const result = await autocannon({
    url: load.url,
    connections: load.connections,
    method: load.method ?? 'GET',
    headers: load.headers,
    ...(amount !== undefined ? { amount } : { duration: phase === 'warmup' ? load.warmupSeconds : load.seconds }),
    ...(next
      ? {
          requests: [
            {
              setupRequest: (request: autocannon.Request) => ({ ...request, ...next() }),
              onResponse: () => {
                lastResponse = performance.now();
              },
            },
          ],
        }
      : {}),
    timeout: 10,
  });
  return { result, seconds: amount !== undefined ? (lastResponse - started) / 1000 : result.duration };
}

/** Warm-up (not counted), then the measured run, with autocannon in this process. */
export async function measureHttp(load: HttpLoad): Promise<Measurement> {
  if ((load.warmupAmount ?? load.warmupSeconds) > 0) await cannon(load, 'warmup');
  const callsBefore = await load.calls?.();
  const cpuBefore = await load.cpu?.();
  const { result, seconds } = await cannon(load, 'measure');
  const cpuAfter = await load.cpu?.();
  const callsAfter = await load.calls?.();
  const ok = result['2xx'];
  return {
    callsEach: callsEach(callsBefore, callsAfter, ok + result.non2xx),
    cpuMicros: cpuBefore !== undefined && cpuAfter !== undefined ? (cpuAfter - cpuBefore) / Math.max(1, result.requests.total) : undefined,
    rate: ok / seconds,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts + result.non2xx,
    completed: ok,
    seconds,
  };
}

/**
 * Multi-request work (a whole authorization flow) on `connections` parallel loops: warm-up, then
 * a measured window; a flow counts when it finishes inside the window, and its latency is the
 * whole flow's. Flows still running when the window closes are waited for, not counted.
 */
export async function measureLoops(
  task: () => Promise<void>,
  options: { connections: number; warmupSeconds: number; seconds: number; cpu?: CpuProbe; calls?: CallsProbe; requestsEach?: number },
): Promise<Measurement> {
  const start = performance.now();
  const windowStart = start + options.warmupSeconds * 1000;
  const windowEnd = windowStart + options.seconds * 1000;
  const latencies: number[] = [];
  let errors = 0;
  let firstError: unknown;
  let cpuBefore: number | undefined;
  let cpuAfter: number | undefined;
  let callsBefore: Record<string, number> | undefined;
  let callsAfter: Record<string, number> | undefined;
  const probes = options.cpu
    ? (async () => {
        await new Promise((resolve) => setTimeout(resolve, windowStart - performance.now()));
        callsBefore = await options.calls?.();
        cpuBefore = await options.cpu!();
        await new Promise((resolve) => setTimeout(resolve, windowEnd - performance.now()));
        cpuAfter = await options.cpu!();
        callsAfter = await options.calls?.();
      })()
    : undefined;
  await Promise.all(
    Array.from({ length: options.connections }, async () => {
      while (performance.now() < windowEnd) {
        const began = performance.now();
        try {
          await task();
          const ended = performance.now();
          if (ended >= windowStart && ended <= windowEnd) latencies.push(ended - began);
        } catch (err) {
          const ended = performance.now();
          if (ended >= windowStart && ended <= windowEnd) errors += 1;
          firstError ??= err;
          // Do not spin on a failing server.
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      }
    }),
  );
  await probes;
  if (firstError) process.stderr.write(`  first failure: ${(firstError as Error).message}\n`);
  latencies.sort((a, b) => a - b);
  return {
    rate: latencies.length / options.seconds,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    errors,
    completed: latencies.length,
    seconds: options.seconds,
    cpuMicros: cpuBefore !== undefined && cpuAfter !== undefined && latencies.length ? (cpuAfter - cpuBefore) / (latencies.length + errors) : undefined,
    // Flows straddle the window's edges: per flow, the server's requests over a flow's requests.
    callsEach: callsEach(callsBefore, callsAfter, latencies.length + errors, options.requestsEach),
  };
}
