import type { Knex } from 'knex';
import type Provider from 'oidc-provider';
import { createRedisAdapter } from '../../adapters/redis.js';
import { createSqlAdapter } from '../../adapters/sql.js';
import type { Config } from '../config.js';
import { createProvider } from '../provider/index.js';
import { loadOrCreateKeys } from '../provider/keys.js';
import { Limits } from '../services/limits.js';
import { sessionIndex } from '../services/sessions.js';
import { withRedis } from './redis.js';

/**
 * Runs `work` with an oidc-provider on the service's own storage (SQL, or Redis when one is
 * configured, under the service's default key prefix), for the commands that revoke what the service
 * issued: sessions, grants and their tokens. Nothing listens.
 */
export function withProvider<T>(config: Config, db: Knex, work: (provider: Provider) => Promise<T>): Promise<T> {
  return withRedis(config, db, async (redis) =>
    work(
      createProvider({
        config,
        db,
        keys: await loadOrCreateKeys(db, config.keysSecret),
        limits: new Limits(config, db, redis),
        sessionIndex: sessionIndex(db, () => {}),
        modelAdapter: redis ? createRedisAdapter(redis) : createSqlAdapter(db),
        renderPage: () => {},
        onError: () => {},
      }),
    ),
  );
}
