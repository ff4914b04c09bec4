/**
 * Whether an error means storage (PostgreSQL, SQLite file, Redis) is unreachable rather than a
 * bug: those answer 503 and the service recovers by itself when storage returns.
 */
const OUTAGE_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EPIPE',
  '57P01', '57P02', '57P03', '08000', '08001', '08003', '08006', 'SQLITE_BUSY', 'SQLITE_CANTOPEN', 'SQLITE_IOERR',
]);

export function isStorageOutage(err: unknown): boolean {
  const e = err as { code?: string; name?: string; message?: string; errors?: unknown[] } | undefined;
  if (!e) return false;
  if (e.code && OUTAGE_CODES.has(e.code)) return true;
  if (e.name === 'KnexTimeoutError' || e.name === 'MaxRetriesPerRequestError') return true;
  if (typeof e.message === 'string' && /Connection is closed|Connection terminated|Stream isn't writeable/.test(e.message)) return true;
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
