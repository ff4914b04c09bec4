import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import type { RedisClient } from '../storage.js';

/**
 * Revocation-safe caches, with Redis, for the lookups made on nearly every request: an
 * application's client record and the account behind a token request (token endpoint, authorize,
 * userinfo), "the application still exists and the user is not disabled" (API calls with an
 * OAuth token), a personal access token with its user's state (API calls with an `ha_` token),
 * the application and group names a flow's sign-in and consent pages show, and the signed-in
 * account every page loads.
 *
 * Every application, user and personal access token has a version in Redis, a random value
 * replaced whenever something a cache holds about it changes (an application edited or deleted, a
 * secret added or deleted, a group deleted with its applications, an account disabled, enabled,
 * deleted, renamed or re-addressed, an address verified, a password changed, reset or rehashed,
 * site administration given or taken, a personal token revoked by its user or by a leak report, a
 * group renamed: its applications). An instance keeps what it read from SQL beside the versions
 * it read just before, and uses it only while the versions in Redis are still those: the version
 * is read on every use, in the same write to Redis as the request's other commands, so a change
 * made on one instance is seen by the very next request on every other. A cached entry is also
 * dropped after MAX_AGE_MS, so that even a version lost with Redis's data cannot keep a stale
 * entry alive for longer.
 *
 * Writers replace the version before their SQL change (a Redis that cannot be written stops the
 * change before anything is written) and again after it commits (so an entry read from SQL
 * between the two is not used past the second). Without Redis (the SQLite profile, possibly
 * shared by several processes on one file) nothing is cached: every lookup reads SQL.
 */
const MAX_AGE_MS = 60_000;
const MAX_ENTRIES = 10_000;
/** Longer than any cached entry lives: a version absent from Redis only means "not changed lately". */
const VERSION_TTL_S = 24 * 3600;
const FAILED_LOOKUP_MS = 1000;

/** An application (by client id), a user, or a personal access token (by id); or the set of signing keys. */
export type Subject = `app:${string}` | `user:${number}` | `pat:${number}` | 'keys:signing';

interface Entry<T> {
  versions: Array<string | null>;
  value: T;
  at: number;
}

export class ChangeVersions {
  constructor(
    private readonly redis: RedisClient,
    private readonly keyPrefix = 'idp:',
  ) {}

  private key(subject: Subject): string {
    return `${this.keyPrefix}ver:${subject}`;
  }

  /** The current versions of `subjects`, read in one go (one GET each, written together). */
  read(subjects: readonly Subject[]): Promise<Array<string | null>> {
    return Promise.all(subjects.map((s) => this.redis.get(this.key(s))));
  }

  /** Gives each subject a new version: every cached entry about it is no longer used. */
  async bump(subjects: readonly Subject[]): Promise<void> {
    await Promise.all(subjects.map((s) => this.redis.set(this.key(s), randomBytes(12).toString('base64url'), 'EX', VERSION_TTL_S)));
  }

  /**
   * A cache whose entries are used only while their subjects' versions are unchanged. `load`
   * reads the truth (SQL); `cached.get` returns it, from memory when the versions read now are
   * the ones read before the entry was loaded.
   */
  cache<T>(load: (key: string) => Promise<T>): VersionedCache<T> {
    const entries = new Map<string, Entry<T>>();
    // Requests that miss at once, having read the same versions, share one load: after a change,
    // fifty requests for one client make one query, not fifty.
    const loading = new Map<string, Promise<T>>();
    // A lookup that just failed (Redis or the database away) fails again at once for a moment: a
    // caller that retries straight away (oidc-provider's authorization error handler looks the
    // client up again) gets its answer now, not after a second wait for the store.
    const failed = new Map<string, { err: unknown; until: number }>();

    const lookUp = async (key: string, subjects: readonly Subject[]): Promise<T> => {
      const versions = await this.read(subjects);
      const entry = entries.get(key);
      if (entry && Date.now() - entry.at < MAX_AGE_MS && entry.versions.every((v, i) => v === versions[i])) return entry.value;
      const flight = `${key}\n${versions.join('\n')}`;
      let pending = loading.get(flight);
      if (!pending) {
        pending = load(key).finally(() => loading.delete(flight));
        loading.set(flight, pending);
        const value = await pending;
        if (entries.size >= MAX_ENTRIES) entries.clear();
        entries.set(key, { versions, value, at: Date.now() });
      }
      return pending;
    };

    return {
      get: async (key, subjects) => {
        const failure = failed.get(key);
        if (failure && Date.now() < failure.until) throw failure.err;
        try {
          return await lookUp(key, subjects);
        } catch (err) {
          if (failed.size >= MAX_ENTRIES) failed.clear();
          failed.set(key, { err, until: Date.now() + FAILED_LOOKUP_MS });
          throw err;
        }
      },
    };
  }
}

export interface VersionedCache<T> {
  get(key: string, subjects: readonly Subject[]): Promise<T>;
}

/**
 * The versions of the process that owns a database handle (a server, or a CLI command), found by
 * the services that change what the caches hold without passing it through every call.
 */
const registry = new WeakMap<Knex, ChangeVersions>();

/** Registers `versions` as `db`'s; the function returned undoes it. */
export function registerChangeVersions(db: Knex, versions: ChangeVersions): () => void {
  registry.set(db, versions);
  return () => registry.delete(db);
}

export function changeVersionsOf(db: Knex): ChangeVersions | undefined {
  return registry.get(db);
}

/**
 * After a change that only freshens what caches hold (an account's name, address or verification):
 * its subjects get new versions. A failure to write them leaves cached entries in use for at most
 * MAX_AGE_MS, so it is reported to the caller, which has committed its change already.
 */
export async function changed(db: Knex, subjects: readonly Subject[]): Promise<void> {
  await changeVersionsOf(db)?.bump(subjects);
}

/**
 * Runs `change` (SQL) between two bumps of `subjects`' versions: before, so a Redis that cannot
 * be written stops the change; after, so no instance keeps using an entry it read in between.
 * Without Redis there is no cache, and `change` just runs.
 */
export async function changing<T>(db: Knex, subjects: readonly Subject[] | (() => Promise<readonly Subject[]>), change: () => Promise<T>): Promise<T> {
  const versions = changeVersionsOf(db);
  if (!versions) return change();
  const list = typeof subjects === 'function' ? await subjects() : subjects;
  await versions.bump(list);
  try {
    return await change();
  } finally {
    await versions.bump(list);
  }
}
