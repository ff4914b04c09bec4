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
