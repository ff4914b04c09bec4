import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { randomBytes } from 'node:crypto';
import { createIdp, type Idp } from '../../src/app.js';
import { loadConfig, type Config } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { freshDatabase, TEST_REDIS_URL, type TestDatabase } from './db.js';

export type Profile = 'sqlite' | 'postgres+redis';

export interface RunningIdp {
  idp: Idp;
  config: Config;
  database: TestDatabase;
  /** The base URL, e.g. http://127.0.0.1:40123 (also the issuer). */
  url: string;
  server: Server;
  stop(): Promise<void>;
}

/** The storage profiles a suite should run on: SQLite always, PostgreSQL + Redis when both are configured. */
export function profiles(): Profile[] {
  return process.env.TEST_DATABASE_URL && TEST_REDIS_URL ? ['sqlite', 'postgres+redis'] : ['sqlite'];
}

/**
 * A real server on a random loopback port with its own fresh database (and its own Redis key
 * prefix), so requests go over real HTTP and the issuer matches the address.
 */
export async function startIdp(
  profile: Profile = 'sqlite',
  env: Record<string, string> = {},
  existing?: TestDatabase,
  /** Instances given the same prefix share their Redis state, as instances of one deployment do. */
  sharedKeyPrefix?: string,
): Promise<RunningIdp> {
  const database = existing ?? (await freshDatabase(profile === 'sqlite' ? 'sqlite' : 'postgres'));
  const server = (await import('node:http')).createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const config = loadConfig({
    NODE_ENV: 'test',
    PORT: String(port),
    ISSUER: `http://127.0.0.1:${port}`,
    DATABASE_URL: database.url,
    REDIS_URL: profile === 'postgres+redis' ? TEST_REDIS_URL : undefined,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    ...env,
  });
  const keyPrefix = sharedKeyPrefix ?? `idp-test:${randomBytes(4).toString('hex')}:`;
  const idp = await createIdp(config, { logger: createLogger(config.logLevel), redisKeyPrefix: keyPrefix });
  server.on('request', idp.app.callback());
  return {
    idp,
    config,
    database,
    url: config.issuer,
    server,
    async stop() {
      await new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
      if (idp.redis?.status === 'ready') {
        const keys = await idp.redis.keys(`${keyPrefix}*`);
        if (keys.length) await idp.redis.del(...keys);
      }
      await idp.close();
      if (!existing) await database.drop();
    },
  };
}
