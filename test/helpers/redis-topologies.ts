import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis, type Cluster } from 'ioredis';
import type { RedisClient } from '../../src/storage.js';

/**
 * Real Redis topologies for the suites under test/redis: a 3-master Cluster (ports 7101-7103) and
 * a master (7201) with one replica (7202) watched by three Sentinels (27301-27303), each a
 * redis-server process of its own in a temporary directory, stopped and removed after.
 *
 * Those suites run only when TEST_REDIS_TOPOLOGIES=1; asked for, they fail (never skip) when the
 * servers cannot be started.
 */
export const TOPOLOGIES_WANTED = process.env.TEST_REDIS_TOPOLOGIES === '1';

const REDIS_SERVER = process.env.TEST_REDIS_SERVER ?? 'redis-server';
const REDIS_CLI = process.env.TEST_REDIS_CLI ?? 'redis-cli';

export const CLUSTER_PORTS = [7101, 7102, 7103];
export const SENTINEL_MASTER_PORT = 7201;
export const SENTINEL_REPLICA_PORT = 7202;
export const SENTINEL_PORTS = [27301, 27302, 27303];
export const SENTINEL_NAME = 'mymaster';

/** Defines a suite that runs only when TEST_REDIS_TOPOLOGIES=1 (pending otherwise, saying so). */
export function describeTopology(title: string, fn: (this: Mocha.Suite) => void): void {
  if (!TOPOLOGIES_WANTED) {
    describe(`${title} (set TEST_REDIS_TOPOLOGIES=1 to run)`, () => {
      it('needs TEST_REDIS_TOPOLOGIES=1');
    });
    return;
  }
  describe(title, function () {
    this.timeout(60_000);
    fn.call(this);
  });
}

/** Polls `ready` until it holds (a failed check counts as not yet); fails with `why()` after `timeoutMs`. */
async function waitFor(ready: () => Promise<boolean>, why: () => string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await ready().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(why());
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

interface Servers {
  dir: string;
  processes: ChildProcess[];
}

/** Refuses to start on a port something already answers on: a server left from another run would be tested instead. */
async function assertFree(port: number): Promise<void> {
  const open = await new Promise<boolean>((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.on('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
  if (open) throw new Error(`port ${port} is already in use; stop what listens there (a server left by an earlier run?)`);
}

function start(servers: Servers, args: string[], port: number): ChildProcess {
  const child = spawn(REDIS_SERVER, args, { cwd: servers.dir, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.on('error', (err) => (stderr += String(err)));
  servers.processes.push(child);
  (child as ChildProcess & { describe?: () => string }).describe = () => `redis-server on ${port}: ${stderr}`;
  return child;
}

async function answers(port: number): Promise<boolean> {
  const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => {});
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

export async function info(port: number, section: string): Promise<string> {
  const client = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 0 });
  try {
    return await client.info(section);
  } finally {
    client.disconnect();
  }
}

async function stopAll(servers: Servers): Promise<void> {
  await Promise.all(
    servers.processes.map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          child.once('exit', () => resolve());
          child.kill('SIGKILL');
        }),
    ),
  );
  rmSync(servers.dir, { recursive: true, force: true });
}

export interface RedisCluster {
  /** `host:port,…` for REDIS_CLUSTER_NODES. */
  nodes: string;
  ports: number[];
  stop(): Promise<void>;
}

/** Three masters on CLUSTER_PORTS, their 16384 slots shared out by `redis-cli --cluster create`. */
export async function startCluster(): Promise<RedisCluster> {
  for (const port of CLUSTER_PORTS) await assertFree(port);
  const servers: Servers = { dir: mkdtempSync(join(tmpdir(), 'idp-redis-cluster-')), processes: [] };
  try {
    for (const port of CLUSTER_PORTS) {
      start(servers, ['--port', String(port), '--bind', '127.0.0.1', '--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`, '--cluster-node-timeout', '2000', '--save', '', '--appendonly', 'no', '--daemonize', 'no', '--dir', servers.dir], port);
    }
    for (const port of CLUSTER_PORTS) await waitFor(() => answers(port), () => `redis-server on ${port} did not start`);
    await promisify(execFile)(REDIS_CLI, ['--cluster', 'create', ...CLUSTER_PORTS.map((p) => `127.0.0.1:${p}`), '--cluster-yes']);
    for (const port of CLUSTER_PORTS) {
      await waitFor(async () => (await info(port, 'cluster')).includes('cluster_enabled:1') && (await clusterState(port)) === 'ok', () => `the cluster node on ${port} never reached cluster_state:ok`, 20_000);
    }
  } catch (err) {
    await stopAll(servers);
    throw err;
  }
  return { nodes: CLUSTER_PORTS.map((p) => `127.0.0.1:${p}`).join(','), ports: CLUSTER_PORTS, stop: () => stopAll(servers) };
}

async function clusterState(port: number): Promise<string | undefined> {
  const client = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 0 });
  try {
    return /cluster_state:(\w+)/.exec(String(await client.call('CLUSTER', 'INFO')))?.[1];
  } finally {
    client.disconnect();
  }
}

export interface RedisSentinels {
  /** `host:port,…` for REDIS_SENTINELS. */
  sentinels: string;
  name: string;
  /** The port of the master the sentinels name now. */
  masterPort(): Promise<number>;
  /** SENTINEL FAILOVER, then waits until the sentinels name the replica as master and the old master replicates it. */
  failover(): Promise<number>;
  stop(): Promise<void>;
}

/** A master and its replica, watched by three Sentinels (`redis-server --sentinel`). */
export async function startSentinels(): Promise<RedisSentinels> {
  for (const port of [SENTINEL_MASTER_PORT, SENTINEL_REPLICA_PORT, ...SENTINEL_PORTS]) await assertFree(port);
  const servers: Servers = { dir: mkdtempSync(join(tmpdir(), 'idp-redis-sentinel-')), processes: [] };
  const common = ['--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no', '--dir', servers.dir];
  const sentinel = (port: number) => new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 0 });
  async function masterPort(): Promise<number> {
    const client = sentinel(SENTINEL_PORTS[0]!);
    try {
      const [, port] = (await client.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', SENTINEL_NAME)) as [string, string];
      return Number(port);
    } finally {
      client.disconnect();
    }
  }
  const linkUp = async (replica: number) => (await info(replica, 'replication')).includes('master_link_status:up');
  const knownReplicas = async () => {
    const client = sentinel(SENTINEL_PORTS[0]!);
    try {
      return ((await client.call('SENTINEL', 'REPLICAS', SENTINEL_NAME)) as unknown[]).length;
    } finally {
      client.disconnect();
    }
  };
  try {
    start(servers, ['--port', String(SENTINEL_MASTER_PORT), ...common], SENTINEL_MASTER_PORT);
    start(servers, ['--port', String(SENTINEL_REPLICA_PORT), '--replicaof', '127.0.0.1', String(SENTINEL_MASTER_PORT), ...common], SENTINEL_REPLICA_PORT);
    for (const port of SENTINEL_PORTS) {
      const file = join(servers.dir, `sentinel-${port}.conf`);
      writeFileSync(file, [
        `port ${port}`,
        'bind 127.0.0.1',
        `dir ${servers.dir}`,
        `sentinel monitor ${SENTINEL_NAME} 127.0.0.1 ${SENTINEL_MASTER_PORT} 2`,
        `sentinel down-after-milliseconds ${SENTINEL_NAME} 2000`,
        `sentinel failover-timeout ${SENTINEL_NAME} 10000`,
        '',
      ].join('\n'));
      start(servers, [file, '--sentinel'], port);
    }
    for (const port of [SENTINEL_MASTER_PORT, SENTINEL_REPLICA_PORT, ...SENTINEL_PORTS]) await waitFor(() => answers(port), () => `server on ${port} did not start`);
    await waitFor(() => linkUp(SENTINEL_REPLICA_PORT), () => 'the replica never synchronised with its master', 20_000);
    await waitFor(async () => (await knownReplicas()) > 0, () => 'the sentinels never discovered the replica', 20_000);
  } catch (err) {
    await stopAll(servers);
    throw err;
  }
  return {
    sentinels: SENTINEL_PORTS.map((p) => `127.0.0.1:${p}`).join(','),
    name: SENTINEL_NAME,
    masterPort,
    async failover() {
      const before = await masterPort();
      const client = sentinel(SENTINEL_PORTS[0]!);
      try {
        await client.call('SENTINEL', 'FAILOVER', SENTINEL_NAME);
      } finally {
        client.disconnect();
      }
      await waitFor(async () => (await masterPort()) !== before, () => 'the sentinels never named a new master', 30_000);
      const after = await masterPort();
      await waitFor(async () => (await info(after, 'replication')).includes('role:master'), () => `${after} never became a master`, 30_000);
      // Until the sentinels turn the old master into a replica, it still takes writes that its
      // resynchronisation then throws away.
      await waitFor(async () => /role:slave[\s\S]*master_link_status:up/.test(await info(before, 'replication')), () => `${before} never became a replica of ${after}`, 30_000);
      return after;
    },
    stop: () => stopAll(servers),
  };
}

/** Every key matching `pattern`, on every master of a Cluster or on the one server. */
export async function scanKeys(redis: RedisClient, pattern: string): Promise<string[]> {
  const nodes = redis.isCluster ? (redis as Cluster).nodes('master') : [redis as Redis];
  const found: string[] = [];
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, batch] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      found.push(...batch);
      cursor = next;
    } while (cursor !== '0');
  }
  return found;
}

/** The Cluster hash slot of `key` (CLUSTER KEYSLOT, as the server computes it). */
export async function keySlot(redis: RedisClient, key: string): Promise<number> {
  return Number(await redis.call('CLUSTER', 'KEYSLOT', key));
}
