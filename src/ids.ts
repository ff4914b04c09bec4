/** The largest id a table's integer column holds (PostgreSQL `integer`). */
export const MAX_ID = 2_147_483_647;

/**
 * A record id from a URL or a form: a decimal 1..MAX_ID, else undefined. Checked before any query,
 * so an over-range number is the caller's mistake (a 400 or 404), never a database error.
 */
export function parseId(raw: unknown): number | undefined {
  if (typeof raw !== 'string' || !/^[1-9][0-9]{0,9}$/.test(raw)) return undefined;
  const id = Number(raw);
  return id <= MAX_ID ? id : undefined;
}
