import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import {
  countPendingSignInTry,
  deletePendingSignIn,
  findPendingSignIn,
  insertPendingSignIn,
  uncountPendingSignInTry,
} from '../db/pending-sign-ins.js';
import type { RedisClient } from '../storage.js';
import { digest } from '../tokens.js';

/**
 * Sign-ins whose password was right and that wait for their second factor, kept where every
 * instance sees them: Redis when the service has it (one hash per sign-in, expiring by itself;
 * each operation touches that one key, so a Cluster is no different), the SQL database otherwise
 * (`pending_sign_ins`, pruned with the other expired rows). The browser holds only a random id;
 * the account, the place the sign-in goes on and the tries are here, stored under the id's digest.
 *
 * Each code tried is counted before it is checked, by one atomic step on the sign-in's record, so
 * however many are sent at once, at most MAX_SECOND_FACTOR_TRIES are checked. Once they are used
 * up the sign-in is spent: the password must be entered again.
 */
export const MAX_SECOND_FACTOR_TRIES = 5;
/** How long a right password waits for its second factor. */
export const PENDING_SIGN_IN_MS = 5 * 60_000;

/** One try counted: the account and the number of this try (1 to MAX_SECOND_FACTOR_TRIES). */
export interface CountedTry {
  userId: number;
  tries: number;
}

export interface PendingSignIns {
  /** Remembers a sign-in of `userId` waiting at `place` (`site`, `flow:<uid>`); returns its id for the browser. */
  start(userId: number, place: string): Promise<string>;
  /** The account of the sign-in waiting at `place` (anywhere, when not given), while it has tries left. */
  waiting(id: string, place?: string): Promise<number | undefined>;
  /**
   * Counts one try before its code is checked: 'spent' when every try is used, undefined when no
   * such sign-in waits at `place` (never started, expired, ended).
   */
  countTry(id: string, place: string): Promise<CountedTry | 'spent' | undefined>;
  /** A try whose code was never checked (a sign-in limit refused it) does not count. */
  uncountTry(id: string): Promise<void>;
  /** The sign-in went on: its id is worth nothing any more. */
  end(id: string): Promise<void>;
}

/** A new sign-in's id: 256 random bits, base64url (no dot, so it fits a signed cookie's fields). */
function newId(): string {
  return randomBytes(32).toString('base64url');
}

// KEYS[1]: the sign-in; ARGV: user, place, lifetime in ms.
const START = `
redis.call('HSET', KEYS[1], 'user', ARGV[1], 'place', ARGV[2], 'tries', 0)
redis.call('PEXPIRE', KEYS[1], ARGV[3])
`;

// KEYS[1]: the sign-in; ARGV: place, most tries. {user, tries} once counted, {user, -1} when
// spent, nil when there is no such sign-in at that place. HINCRBY on a key that exists keeps its TTL.
const COUNT_TRY = `
local f = redis.call('HMGET', KEYS[1], 'user', 'place', 'tries')
if not f[1] or f[2] ~= ARGV[1] then return nil end
if tonumber(f[3]) >= tonumber(ARGV[2]) then return {f[1], -1} end
return {f[1], redis.call('HINCRBY', KEYS[1], 'tries', 1)}
`;

// Only on a sign-in still there (HINCRBY on an expired key would make one without a TTL).
const UNCOUNT_TRY = `
local tries = redis.call('HGET', KEYS[1], 'tries')
if tries and tonumber(tries) > 0 then redis.call('HINCRBY', KEYS[1], 'tries', -1) end
`;

type Script = (...args: Array<string | number>) => Promise<unknown>;

function script(redis: RedisClient, name: string, lua: string): Script {
  const command = `idpPendingSignIn${name}`;
  if (!(command in redis)) redis.defineCommand(command, { numberOfKeys: 1, lua });
  const run = (redis as unknown as Record<string, Script>)[command]!;
  return (...args) => run.apply(redis, args);
}

function redisPendingSignIns(redis: RedisClient, keyPrefix: string): PendingSignIns {
  const keyOf = (id: string) => `${keyPrefix}pending-sign-in:${digest(id)}`;
  const start = script(redis, 'Start', START);
  const countTry = script(redis, 'CountTry', COUNT_TRY);
  const uncountTry = script(redis, 'UncountTry', UNCOUNT_TRY);
  return {
    async start(userId, place) {
      const id = newId();
      await start(keyOf(id), userId, place, PENDING_SIGN_IN_MS);
      return id;
    },
    async waiting(id, place) {
      const [user, at, tries] = await redis.hmget(keyOf(id), 'user', 'place', 'tries');
      if (!user || (place !== undefined && at !== place) || Number(tries) >= MAX_SECOND_FACTOR_TRIES) return undefined;
      return Number(user);
    },
    async countTry(id, place) {
      const counted = (await countTry(keyOf(id), place, MAX_SECOND_FACTOR_TRIES)) as [string, number] | null;
      if (!counted) return undefined;
      return counted[1] < 0 ? 'spent' : { userId: Number(counted[0]), tries: Number(counted[1]) };
    },
    async uncountTry(id) {
      await uncountTry(keyOf(id));
    },
    async end(id) {
      await redis.del(keyOf(id));
    },
  };
}

function sqlPendingSignIns(db: Knex): PendingSignIns {
  return {
    async start(userId, place) {
      const id = newId();
      await insertPendingSignIn(db, { digest: digest(id), userId, place, expiresAt: Date.now() + PENDING_SIGN_IN_MS });
      return id;
    },
    async waiting(id, place) {
      const row = await findPendingSignIn(db, digest(id), place);
      return row && row.tries < MAX_SECOND_FACTOR_TRIES ? row.user_id : undefined;
    },
    async countTry(id, place) {
      const counted = await countPendingSignInTry(db, digest(id), place, MAX_SECOND_FACTOR_TRIES);
      if (counted) return { userId: counted.user_id, tries: counted.tries };
      // Not counted: spent, or not there at all (a rare second read, on the refusal's path only).
      return (await findPendingSignIn(db, digest(id), place)) ? 'spent' : undefined;
    },
    uncountTry: (id) => uncountPendingSignInTry(db, digest(id)),
    end: (id) => deletePendingSignIn(db, digest(id)),
  };
}

export function pendingSignIns(db: Knex, redis: RedisClient | undefined, redisKeyPrefix = 'idp:'): PendingSignIns {
  return redis ? redisPendingSignIns(redis, redisKeyPrefix) : sqlPendingSignIns(db);
}
