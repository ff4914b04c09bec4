import type { Knex } from 'knex';
import type { Config } from '../config.js';
import { ChangeVersions, registerChangeVersions } from '../services/change-versions.js';
import { connectRedis, type RedisClient } from '../storage.js';

/**
 * Runs `work` with the service's Redis connected, when one is configured, and registered for the
 * caches' versions (see `services/change-versions.ts`): what the command changes is seen at once
 * by every running instance. The connection is closed after.
 */
export async function withRedis<T>(config: Config, db: Knex, work: (redis: RedisClient | undefined) => Promise<T>): Promise<T> {
  const redis = config.redis ? connectRedis(config.redis, config.redisTimeoutMs) : undefined;
  // Connection errors reach the command as the failed call's own error, once.
  redis?.on('error', () => {});
  const unregister = redis ? registerChangeVersions(db, new ChangeVersions(redis)) : undefined;
  try {
    return await work(redis);
  } finally {
    unregister?.();
    redis?.disconnect();
  }
}
