import { Cluster, Redis, type ClusterNode, type ClusterOptions, type Command } from 'ioredis';
import type { RedisTopology } from './config.js';

/**
 * Whether an error means storage (PostgreSQL, SQLite file, Redis) is unreachable, or too slow to
 * answer within its timeout, rather than a bug: those answer 503 with Retry-After and the service
 * recovers by itself when storage returns.
 */
const OUTAGE_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EPIPE',
  // PostgreSQL: shut down or restarting, connection failures, and 57014, a statement cancelled by
  // statement_timeout.
  '57014', '57P01', '57P02', '57P03', '08000', '08001', '08003', '08006', 'SQLITE_BUSY', 'SQLITE_CANTOPEN', 'SQLITE_IOERR',
]);

/**
 * ioredis's words for a Redis that is away: a connection lost, a command or socket timed out, a
 * Cluster none of whose nodes answers (or that answers CLUSTERDOWN), Sentinels none of which
 * answers or names a master, a master just demoted by a failover.
 */
const REDIS_OUTAGE_MESSAGES =
  /Connection is closed|Stream isn't writeable|Command timed out|Socket timeout|None of startup nodes is available|Failed to refresh slots cache|Cluster is disconnected|All sentinels are unreachable|^CLUSTERDOWN|^READONLY|^LOADING/;

/** pg's words for a connection lost or given up on: closed, a connect or query timeout, a client whose socket was dropped. */
const DATABASE_OUTAGE_MESSAGES = /Connection terminated|Query read timeout|timeout expired|is not queryable/;

/** Seconds a client is told to wait before retrying while storage is away. */
export const OUTAGE_RETRY_AFTER_S = 5;

export function isStorageOutage(err: unknown): boolean {
  const e = err as { code?: string; name?: string; message?: string; errors?: unknown[] } | undefined;
  if (!e) return false;
  if (e.code && OUTAGE_CODES.has(e.code)) return true;
  if (e.name === 'KnexTimeoutError' || e.name === 'MaxRetriesPerRequestError' || e.name === 'ClusterAllFailedError') return true;
  if (typeof e.message === 'string' && (DATABASE_OUTAGE_MESSAGES.test(e.message) || REDIS_OUTAGE_MESSAGES.test(e.message))) return true;
  return Array.isArray(e.errors) && e.errors.some(isStorageOutage);
}

/**
 * Whether an error is the database refusing a value (PostgreSQL's SQLSTATE class 22, "data
 * exception": a null byte, a string too long for its column, a number out of range; SQLite's few
 * equivalents). Input validation should stop such values first; when one slips through, it is
 * the request that is wrong, so the answer is a 400, never a 500.
 */
const SQLITE_VALUE_CODES = new Set(['SQLITE_TOOBIG', 'SQLITE_MISMATCH']);

export function isValueError(err: unknown): boolean {
  const e = err as { code?: unknown; errors?: unknown[] } | undefined;
  if (!e) return false;
  if (typeof e.code === 'string' && (/^22[0-9A-Z]{3}$/.test(e.code) || SQLITE_VALUE_CODES.has(e.code))) return true;
  return Array.isArray(e.errors) && e.errors.some(isValueError);
}

export const VALUE_ERROR_MESSAGE = 'a value in the request is out of range, too long or not allowed';

/**
 * Which store an outage came from, for the storage-error metric: ioredis's own failures (a
 * command given up after its retries, a closed or unwritable connection, a command timeout) are
 * Redis's; everything else is the SQL database's (knex, pg, SQLite).
 */
export function outageStore(err: unknown): 'database' | 'redis' {
  const e = err as { name?: string; message?: string; errors?: unknown[] } | undefined;
  if (e?.name === 'MaxRetriesPerRequestError' || e?.name === 'ReplyError' || e?.name === 'ClusterAllFailedError') return 'redis';
  if (typeof e?.message === 'string' && REDIS_OUTAGE_MESSAGES.test(e.message)) return 'redis';
  if (Array.isArray(e?.errors) && e.errors.some((inner) => outageStore(inner) === 'redis')) return 'redis';
  return 'database';
}

/** The service's Redis client: one server or a Sentinel-managed master (Redis), or a Cluster. */
export type RedisClient = Redis | Cluster;

/**
 * The Redis client of the service. Every command is answered within `timeoutMs` or fails (503):
 * a refused connection fails commands after a few quick reconnection attempts
 * (`maxRetriesPerRequest`), and a connection that accepts commands and answers nothing is
 * destroyed after `timeoutMs` of silence (`socketTimeout`) and reopened, so service resumes by
 * itself once Redis answers again. Commands sent while reconnecting wait in the offline queue,
 * bounded by the same timeout, rather than failing at once during a brief reconnection.
 *
 * The same holds for each node of a Cluster, and for the master behind Sentinels: the sentinels
 * are asked again (at least once a second) until one names a master that answers, and after a
 * failover the client follows the new master by itself.
 */
export function connectRedis(topology: RedisTopology, timeoutMs: number): RedisClient {
  // Reconnection attempts come at least once a second, so a command sent just as Redis
  // returns finds a connection before its own timeout (ioredis waits up to 2 s by default).
  const retry = (attempts: number) => Math.min(attempts * 100, Math.min(1000, timeoutMs / 2));
  const node = {
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
    socketTimeout: timeoutMs,
    maxRetriesPerRequest: 2,
    // Commands sent in the same tick, by one request or by many at once, leave in one socket
    // write: under load most of a command's cost here is the write itself.
    enableAutoPipelining: true,
  };
  switch (topology.kind) {
    case 'single':
      return new Redis(topology.url, { ...node, retryStrategy: retry, enableOfflineQueue: true, lazyConnect: false });
    case 'sentinel':
      return new Redis({
        ...node,
        sentinels: topology.sentinels,
        name: topology.name,
        password: topology.password,
        sentinelRetryStrategy: retry,
        sentinelCommandTimeout: timeoutMs,
        // Told of a failover by the sentinels themselves (+switch-master) rather than by the old
        // master's closed connection or a READONLY reply.
        failoverDetector: true,
        retryStrategy: retry,
        enableOfflineQueue: true,
        lazyConnect: false,
      });
    case 'cluster':
      return new BoundedCluster(topology.nodes, timeoutMs, {
        clusterRetryStrategy: retry,
        slotsRefreshTimeout: timeoutMs,
        enableAutoPipelining: true,
        enableOfflineQueue: true,
        lazyConnect: false,
        redisOptions: { ...node, password: topology.password },
      });
  }
}

/**
 * A Cluster whose commands fail after `timeoutMs` wherever they wait: ioredis bounds a command
 * only once a node's connection takes it, and a command sent while the whole cluster is away
 * would otherwise wait in the cluster's own offline queue until it returns.
 */
class BoundedCluster extends Cluster {
  constructor(nodes: ClusterNode[], private readonly timeoutMs: number, options: ClusterOptions & { redisOptions?: { replyMapping?: 'legacy' } }) {
    super(nodes, options);
  }

  override sendCommand(command: Command, ...rest: unknown[]): unknown {
    command.setTimeout(this.timeoutMs);
    return (super.sendCommand as (...args: unknown[]) => unknown).call(this, command, ...rest);
  }
}
