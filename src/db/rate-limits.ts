import type { Knex } from 'knex';

export const RATE_LIMITS_TABLE = 'rate_limits';

/** Deletes counters that have expired (the limiter ignores them already); returns how many. */
export function pruneRateLimits(db: Knex): Promise<number> {
  return db(RATE_LIMITS_TABLE).where('expire', '<', Date.now()).del();
}
