import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import knexFactory, { type Knex } from 'knex';
import { migrationSource } from './migrations/index.js';

export type Db = Knex;

/**
 * Limits on how long PostgreSQL may keep a request waiting: connecting, waiting for a pooled
 * connection and each statement. Without them a database that accepts connections and never
 * answers holds every request until the operating system gives up on the socket.
 */
export interface DbTimeouts {
  timeoutMs: number;
  /** false: connecting only (migrations may run long statements). */
  statements?: boolean;
}

/**
 * The client waits this much longer than the server's statement_timeout: a statement that is
 * merely slow is cancelled by the server first (57014, and the connection stays usable); only a
 * server that does not answer at all makes the client give up and drop the connection.
 */
const CLIENT_GRACE_MS = 500;

/** The shortest a transaction may sit without a statement before the server ends it. */
const IDLE_TRANSACTION_FLOOR_MS = 60_000;

/** Builds the knex configuration for `sqlite:<file>` or `postgres://…`. */
export function knexConfig(databaseUrl: string, timeouts?: DbTimeouts): Knex.Config {
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
  const timeoutMs = timeouts?.timeoutMs;
  const statements = timeoutMs !== undefined && timeouts?.statements !== false;
  return {
    client: 'pg',
    connection: {
      connectionString: databaseUrl,
      ...(timeoutMs ? { connectionTimeoutMillis: timeoutMs } : {}),
      ...(statements
        ? {
            statement_timeout: timeoutMs,
            query_timeout: timeoutMs + CLIENT_GRACE_MS,
            // A transaction whose client vanished without the server noticing (a network
            // partition, not a closed socket) would hold its row locks until the server's TCP
            // gives up, hours later; the server ends it after this long without a statement.
            idle_in_transaction_session_timeout: Math.max(IDLE_TRANSACTION_FLOOR_MS, timeoutMs * 10),
            // And idle pooled connections to a vanished server are found by TCP keep-alive probes.
            keepAlive: true,
          }
        : {}),
    },
    pool: {
      min: 0,
      max: 10,
      ...(statements
        ? {
            afterCreate(conn: PgConnection, done: (err: Error | null, conn: unknown) => void) {
              dropWhenUnanswered(conn);
              done(null, conn);
            },
          }
        : {}),
    },
    acquireConnectionTimeout: timeoutMs ?? 5000,
    migrations,
  };
}

/** The parts of a pg Client that dropWhenUnanswered touches. */
interface PgConnection {
  query(...args: unknown[]): unknown;
  connection: { stream: { destroy(err?: Error): void } };
}

/**
 * pg's query_timeout rejects a statement the server never answers but keeps the connection
 * waiting for that answer, so whatever is sent next on it (a transaction's ROLLBACK, the next
 * request's query) waits behind it. Closing the socket instead makes those fail at once, the
 * server roll back the open transaction, and the pool open a fresh connection.
 */
function dropWhenUnanswered(conn: PgConnection): void {
  const query = conn.query.bind(conn);
  conn.query = (...args: unknown[]) => {
    const callback = args.at(-1);
    if (typeof callback === 'function') {
      args[args.length - 1] = (err: Error | null, ...rest: unknown[]) => {
        if (err?.message === 'Query read timeout') conn.connection.stream.destroy();
        return callback(err, ...rest);
      };
    }
    return query(...args);
  };
}

/** Where knex's own warnings go (by default it console.logs them, stack traces included). */
export interface DbLog {
  warn(message: unknown): void;
}

export function createDb(databaseUrl: string, log?: DbLog, timeouts?: DbTimeouts): Db {
  if (databaseUrl.startsWith('sqlite:')) {
    const file = databaseUrl.slice('sqlite:'.length);
    if (file !== ':memory:') mkdirSync(dirname(resolve(file)), { recursive: true });
  }
  const config = knexConfig(databaseUrl, timeouts);
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

/**
 * The service's database, migrated. On PostgreSQL the migrations run on a pool of their own
 * whose statements have no time limit (a migration of a large table may take longer than any
 * request should; connecting is limited all the same), and requests then use a pool whose
 * statements have one.
 */
export async function openDatabase(databaseUrl: string, log: DbLog | undefined, timeouts: DbTimeouts): Promise<Db> {
  if (databaseUrl.startsWith('sqlite:')) {
    const db = createDb(databaseUrl, log);
    await migrateLatest(db);
    return db;
  }
  const migrator = createDb(databaseUrl, log, { ...timeouts, statements: false });
  try {
    await migrateLatest(migrator);
  } finally {
    await migrator.destroy();
  }
  return createDb(databaseUrl, log, timeouts);
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
