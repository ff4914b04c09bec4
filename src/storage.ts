import { Redis } from 'ioredis';

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
 * The drivers' words for a connection lost or given up on: pg (closed, a connect or query
 * timeout, a client whose socket was dropped) and ioredis (closed, a command or socket timeout).
 */
const OUTAGE_MESSAGES =
  /Connection is closed|Connection terminated|Stream isn't writeable|Query read timeout|timeout expired|is not queryable|Command timed out|Socket timeout/;

/** Seconds a client is told to wait before retrying while storage is away. */
export const OUTAGE_RETRY_AFTER_S = 5;

export function isStorageOutage(err: unknown): boolean {
  const e = err as { code?: string; name?: string; message?: string; errors?: unknown[] } | undefined;
  if (!e) return false;
  if (e.code && OUTAGE_CODES.has(e.code)) return true;
  if (e.name === 'KnexTimeoutError' || e.name === 'MaxRetriesPerRequestError') return true;
  if (typeof e.message === 'string' && OUTAGE_MESSAGES.test(e.message)) return true;
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
  if (typeof e?.message === 'string' && /Connection is closed|Stream isn't writeable|Command timed out|None of (the )?sentinels|refresh slots cache/.test(e.message)) return 'redis';
  if (Array.isArray(e?.errors) && e.errors.some((inner) => outageStore(inner) === 'redis')) return 'redis';
  return 'database';
}

/**
 * The Redis client of the service. Every command is answered within `timeoutMs` or fails (503):
 * a refused connection fails commands after a few quick reconnection attempts
 * (`maxRetriesPerRequest`), and a connection that accepts commands and answers nothing is
 * destroyed after `timeoutMs` of silence (`socketTimeout`) and reopened, so service resumes by
 * itself once Redis answers again. Commands sent while reconnecting wait in the offline queue,
 * bounded by the same timeout, rather than failing at once during a brief reconnection.
 */
export function connectRedis(url: string, timeoutMs: number): Redis {
  return new Redis(url, {
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
    socketTimeout: timeoutMs,
    maxRetriesPerRequest: 2,
    // Reconnection attempts come at least once a second, so a command sent just as Redis
    // returns finds a connection before its own timeout (ioredis waits up to 2 s by default).
    retryStrategy: (attempts) => Math.min(attempts * 100, Math.min(1000, timeoutMs / 2)),
    enableOfflineQueue: true,
    lazyConnect: false,
  });
}
