import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import knexFactory, { type Knex } from 'knex';
import { migrationSource } from './migrations/index.js';

export type Db = Knex;

/** Builds the knex configuration for `sqlite:<file>` or `postgres://…`. */
export function knexConfig(databaseUrl: string): Knex.Config {
  const migrations: Knex.MigratorConfig = { migrationSource, tableName: 'knex_migrations' };
  if (databaseUrl.startsWith('sqlite:')) {
    const file = databaseUrl.slice('sqlite:'.length);
    const filename = file === ':memory:' ? ':memory:' : resolve(file);
    return {
      client: 'better-sqlite3',
      connection: { filename },
      useNullAsDefault: true,
      migrations,
      pool: {
        // One connection: SQLite has a single writer, and a pool of one turns concurrent
        // transactions into a queue instead of SQLITE_BUSY errors.
        min: 1,
        max: 1,
        afterCreate(conn: { pragma(s: string): unknown }, done: (err: Error | null, conn: unknown) => void) {
          conn.pragma('journal_mode = WAL');
          conn.pragma('foreign_keys = ON');
          conn.pragma('busy_timeout = 5000');
          conn.pragma('synchronous = NORMAL');
          done(null, conn);
        },
      },
    };
  }
  return {
    client: 'pg',
    connection: { connectionString: databaseUrl },
    pool: { min: 0, max: 10 },
    acquireConnectionTimeout: 5000,
    migrations,
  };
}

/** Where knex's own warnings go (by default it console.logs them, stack traces included). */
export interface DbLog {
  warn(message: unknown): void;
}

export function createDb(databaseUrl: string, log?: DbLog): Db {
  if (databaseUrl.startsWith('sqlite:')) {
    const file = databaseUrl.slice('sqlite:'.length);
    if (file !== ':memory:') mkdirSync(dirname(resolve(file)), { recursive: true });
  }
  const config = knexConfig(databaseUrl);
  if (log) {
    const warn = (message: unknown) => log.warn(message);
    config.log = { warn, error: warn, deprecate: warn, debug: () => {} };
  }
  return knexFactory(config);
}

/**
 * Runs pending migrations. Instances starting together against one PostgreSQL race for knex's
 * migration lock; the loser waits for the winner instead of failing to start.
 */
export async function migrateLatest(db: Db): Promise<string[]> {
  for (let attempt = 0; ; attempt += 1) {
    try {
      const [, applied] = (await db.migrate.latest()) as [number, string[]];
      return applied;
    } catch (err) {
      if ((err as Error).name !== 'MigrationLocked' || attempt >= 60) throw err;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

export function isPostgres(db: Db): boolean {
  return db.client.config.client === 'pg';
}

/** Unique-constraint violation on either database, so services can turn it into a 409 naming the field. */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  return e?.code === '23505' || e?.code === 'SQLITE_CONSTRAINT_UNIQUE' || e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

/** One round trip to the database: what /readyz asks. */
export async function ping(db: Knex): Promise<void> {
  await db.raw('select 1');
}
