import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, resolve } from 'node:path';
import knexFactory, { type Knex } from 'knex';
import { migrationSource } from './migrations/index.js';

export type Db = Knex;

/**
 * How connections reach PostgreSQL. `session`: directly, or through a pooler that keeps one server
 * connection per client connection. `transaction`: through a pooler (pgbouncer with
 * `pool_mode = transaction`) that lends a server connection for one transaction and then gives it
 * to another client, so nothing may outlive a transaction:
 * - no startup parameters: pgbouncer refuses statement_timeout and
 *   idle_in_transaction_session_timeout when connecting, and would not carry them to the server
 *   connection of the next transaction anyway; the server-side limits are then the database
 *   role's own settings (`ALTER ROLE … SET statement_timeout`), which every server connection
 *   pgbouncer opens starts with. pg's client-side limit (query_timeout) stays: it does not depend
 *   on the server, and a statement the server does not answer still drops its connection;
 * - no named prepared statements: a name prepared on one server connection is unknown on the
 *   next one ("prepared statement … does not exist") or already taken there ("… already
 *   exists"); the name of every query is dropped on the connection, so a query written with one
 *   (the bearer check, the groups page) runs unnamed, parsed each time;
 * - nothing else in this service is tied to a session: no SET without LOCAL, advisory lock,
 *   LISTEN or temporary table; row locks (FOR UPDATE) and knex's migration lock (a row in
 *   knex_migrations_lock updated in a transaction) live in transactions, which the pooler keeps
 *   on one server connection from BEGIN to COMMIT.
 */
export type DbPooling = 'session' | 'transaction';

/**
 * Limits on how long PostgreSQL may keep a request waiting: connecting, waiting for a pooled
 * connection and each statement. Without them a database that accepts connections and never
 * answers holds every request until the operating system gives up on the socket. And how
 * connections reach it (`pooling`, default session).
 */
export interface DbOptions {
  timeoutMs?: number;
  /** false: connecting only (migrations may run long statements). */
  statements?: boolean;
  pooling?: DbPooling;
}

/**
 * The client waits this much longer than the server's statement_timeout: a statement that is
 * merely slow is cancelled by the server first (57014, and the connection stays usable); only a
 * server that does not answer at all makes the client give up and drop the connection.
 */
const CLIENT_GRACE_MS = 500;

/** The shortest a transaction may sit without a statement before the server ends it. */
const IDLE_TRANSACTION_FLOOR_MS = 60_000;

const require = createRequire(import.meta.url);

/**
 * The SQLite driver this Node.js can run. better-sqlite3 12 wraps its objects with node::ObjectWrap,
 * whose destructor on Node.js 24 requires a current environment: a prepared statement collected by
 * the garbage collector at the wrong moment aborts the whole process ("Assertion failed: (env) !=
 * nullptr" in RemoveEnvironmentCleanupHook; knex prepares a statement for every query, so it is a
 * matter of time). better-sqlite3 13 is built on Node-API, ships prebuilt binaries and has no such
 * destructor, but needs Node.js 22 or later; both are installed (13 under the name
 * `better-sqlite3-napi`), and the major version of the running Node.js picks one.
 */
export function sqliteDriverPackage(nodeVersion = process.versions.node): 'better-sqlite3' | 'better-sqlite3-napi' {
  return Number(nodeVersion.split('.')[0]) >= 22 ? 'better-sqlite3-napi' : 'better-sqlite3';
}

/**
 * Loads a SQLite driver package. A build that does not load here (installed by another Node.js, or
 * no prebuilt binary for this platform) fails start-up with one line saying which and what to do,
 * instead of the loader's message over several lines.
 */
export function requireSqliteDriver(pkg: string = sqliteDriverPackage()): unknown {
  try {
    const Database = require(pkg) as new (filename: string) => { close(): void };
    // better-sqlite3 loads its native binding with the first database, not on require.
    new Database(':memory:').close();
    return Database;
  } catch (err) {
    // The loader's own words on one line, without Node's list of requiring modules.
    const reason = (err instanceof Error ? err.message : String(err)).split('\nRequire stack:')[0]!.replace(/\s+/g, ' ').trim();
    throw new Error(`the SQLite driver (${pkg}) does not load on Node.js ${process.versions.node}: ${reason}; run npm ci with the Node.js that runs the service`, { cause: err });
  }
}

type KnexClientClass = new (config: Knex.Config) => Knex.Client;
/** knex's SQLite transaction class (not in its typings): begin() issues BEGIN; query() runs on the transaction's connection. */
type SqliteTransactionClass = new (client: unknown, ...args: unknown[]) => { query(conn: unknown, sql: string): unknown };
let sqliteClientClass: KnexClientClass | undefined;

/** knex's better-sqlite3 dialect, loading the driver `sqliteDriverPackage` names. */
function sqliteClient(): KnexClientClass {
  if (!sqliteClientClass) {
    // knex has no public way to hand a dialect its driver module but to subclass the dialect.
    const Dialect = require('knex/lib/dialects/better-sqlite3/index.js') as KnexClientClass;
    const driver = requireSqliteDriver();
    const SqliteTransaction = require('knex/lib/dialects/sqlite3/execution/sqlite-transaction.js') as SqliteTransactionClass;
    /**
     * Transactions begin IMMEDIATE: they take SQLite's write lock at BEGIN, waiting for it as long as
     * busy_timeout allows. A plain (deferred) BEGIN takes it only at the first write, and in WAL mode
     * a transaction that has read and then finds another process (`idp` beside the running
     * service) committed in between cannot take it at all: SQLITE_BUSY at once, without waiting
     * ("database is locked"). Within one process the pool of one connection queues transactions
     * anyway, so nothing waits longer than it did.
     */
    class ImmediateTransaction extends SqliteTransaction {
      begin(conn: unknown): unknown {
        return this.query(conn, 'BEGIN IMMEDIATE;');
      }
    }
    sqliteClientClass = class extends Dialect {
      constructor(config: Knex.Config) {
        // Named as the dialect it is, for whoever reads `client.config.client` (rate-limiter-flexible
        // checks it for SQLite), rather than as this class.
        super({ ...config, client: 'better-sqlite3' });
      }

      _driver(): unknown {
        return driver;
      }

      override transaction(...args: Parameters<Knex.Client['transaction']>): ReturnType<Knex.Client['transaction']> {
        return new ImmediateTransaction(this, ...args) as unknown as ReturnType<Knex.Client['transaction']>;
      }
    };
  }
  return sqliteClientClass;
}

/** Builds the knex configuration for `sqlite:<file>` or `postgres://…`. */
export function knexConfig(databaseUrl: string, options: DbOptions = {}): Knex.Config {
  const migrations: Knex.MigratorConfig = { migrationSource, tableName: 'knex_migrations' };
  if (databaseUrl.startsWith('sqlite:')) {
    const file = databaseUrl.slice('sqlite:'.length);
    const filename = file === ':memory:' ? ':memory:' : resolve(file);
    return {
      client: sqliteClient() as unknown as Knex.Config['client'],
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
  const { timeoutMs } = options;
  const statements = timeoutMs !== undefined && options.statements !== false;
  const transactionPooling = options.pooling === 'transaction';
  return {
    client: 'pg',
    connection: {
      connectionString: databaseUrl,
      ...(timeoutMs ? { connectionTimeoutMillis: timeoutMs } : {}),
      ...(statements
        ? {
            query_timeout: timeoutMs + CLIENT_GRACE_MS,
            // And idle pooled connections to a vanished server are found by TCP keep-alive probes.
            keepAlive: true,
          }
        : {}),
      ...(statements && !transactionPooling
        ? {
            statement_timeout: timeoutMs,
            // A transaction whose client vanished without the server noticing (a network
            // partition, not a closed socket) would hold its row locks until the server's TCP
            // gives up, hours later; the server ends it after this long without a statement.
            idle_in_transaction_session_timeout: idleTransactionTimeoutMs(timeoutMs),
          }
        : {}),
    },
    pool: {
      min: 0,
      max: 10,
      ...(statements || transactionPooling
        ? {
            afterCreate(conn: PgConnection, done: (err: Error | null, conn: unknown) => void) {
              if (statements) dropWhenUnanswered(conn);
              if (transactionPooling) unnamed(conn);
              done(null, conn);
            },
          }
        : {}),
    },
    acquireConnectionTimeout: timeoutMs ?? 5000,
    migrations,
  };
}

/** How long the server lets a transaction sit without a statement, for a statement limit of `timeoutMs`. */
function idleTransactionTimeoutMs(timeoutMs: number): number {
  return Math.max(IDLE_TRANSACTION_FLOOR_MS, timeoutMs * 10);
}

/** The parts of a pg Client that dropWhenUnanswered touches. */
interface PgConnection {
  query(...args: unknown[]): unknown;
  connection: { stream: { destroy(err?: Error): void } };
}

/**
 * Sends every query without its name (an unnamed statement, parsed for that query alone): under
 * transaction pooling a named one would be prepared on whichever server connection the pooler
 * lent, and missing or taken on the next. Dropped here, on the connection, rather than where a
 * query is written, so no query can bring a name back.
 */
function unnamed(conn: PgConnection): void {
  const query = conn.query.bind(conn);
  conn.query = (config: unknown, ...rest: unknown[]) => {
    if (typeof config === 'object' && config !== null && 'name' in config && !('submit' in config)) {
      const { name: _name, ...text } = config as Record<string, unknown>;
      return query(text, ...rest);
    }
    return query(config, ...rest);
  };
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

export function createDb(databaseUrl: string, log?: DbLog, options?: DbOptions): Db {
  if (databaseUrl.startsWith('sqlite:')) {
    const file = databaseUrl.slice('sqlite:'.length);
    if (file !== ':memory:') mkdirSync(dirname(resolve(file)), { recursive: true });
  }
  const config = knexConfig(databaseUrl, options);
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
      if (!(isMigrationLocked(err) || isMigrationTablesRace(err)) || attempt >= 60) throw err;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

const isMigrationLocked = (err: unknown) => (err as Error)?.name === 'MigrationLocked';

/**
 * knex creates its own tables (knex_migrations and its lock) before it takes the lock, so
 * instances starting together on a brand-new PostgreSQL database race to create them: the
 * loser gets "relation already exists" (42P07) or "type already exists" (42710), or, when both
 * create the same table at the same instant, a unique violation in one of PostgreSQL's own
 * catalogs (pg_class, pg_type: their indexes are named pg_…). The tables are there by then; the next attempt finds them and waits
 * for the lock like the others.
 */
function isMigrationTablesRace(err: unknown): boolean {
  const e = err as { code?: string; constraint?: string; message?: string };
  if (e?.code === '42P07' || e?.code === '42710') return true;
  const constraint = e?.constraint ?? /unique constraint "([^"]+)"/.exec(e?.message ?? '')?.[1];
  return e?.code === '23505' && constraint?.startsWith('pg_') === true;
}

/**
 * The service's database, migrated. On PostgreSQL the migrations run on a pool of their own
 * whose statements have no time limit (a migration of a large table may take longer than any
 * request should; connecting is limited all the same), and requests then use a pool whose
 * statements have one. That pool connects once before this returns, so a pooler that refuses
 * its connections stops the start with an error that says what to set (see checkPooling).
 */
export async function openDatabase(databaseUrl: string, log: DbLog | undefined, options: DbOptions): Promise<Db> {
  if (databaseUrl.startsWith('sqlite:')) {
    const db = createDb(databaseUrl, log);
    await migrateLatest(db);
    return db;
  }
  const migrator = createDb(databaseUrl, log, { ...options, statements: false });
  try {
    await migrateLatest(migrator);
  } finally {
    await migrator.destroy();
  }
  const db = createDb(databaseUrl, log, options);
  try {
    await checkPooling(db, log, options);
  } catch (err) {
    await db.destroy();
    throw err;
  }
  return db;
}

/** What pgbouncer answers a startup parameter it does not know (SQLSTATE 08P01). */
const UNSUPPORTED_STARTUP_PARAMETER = /^unsupported startup parameter: /;

/**
 * Session pooling sends the statement limits when connecting: a pgbouncer in front refuses them,
 * and the start fails with what to set instead of every request failing with pgbouncer's words.
 * Transaction pooling leaves the server-side limits to the database role: a role without them
 * is started with all the same, and a warning names the settings it lacks.
 */
async function checkPooling(db: Db, log: DbLog | undefined, options: DbOptions): Promise<void> {
  if (options.pooling !== 'transaction') {
    try {
      await ping(db);
    } catch (err) {
      const message = (err as Error).message;
      if (!UNSUPPORTED_STARTUP_PARAMETER.test(message)) throw err;
      throw new Error(
        `the database refused a connection: "${message}". DATABASE_URL leads to a connection pooler such as pgbouncer: ` +
          'set DATABASE_POOLING=transaction, and statement_timeout and idle_in_transaction_session_timeout on the database role',
        { cause: err },
      );
    }
    return;
  }
  if (options.timeoutMs === undefined || options.statements === false) return;
  const { rows } = (await db.raw(
    "select current_setting('statement_timeout') as statement_timeout, current_setting('idle_in_transaction_session_timeout') as idle_in_transaction_session_timeout",
  )) as { rows: Array<Record<string, string>> };
  const unset = Object.entries(rows[0] ?? {})
    .filter(([, value]) => value === '0')
    .map(([name]) => name);
  if (unset.length) {
    log?.warn(
      `DATABASE_POOLING=transaction and the database role has no ${unset.join(' and ')}: a statement or transaction may hold a server connection ` +
        `until the client gives up; set them on the role (ALTER ROLE … SET statement_timeout = '${options.timeoutMs}ms', ` +
        `idle_in_transaction_session_timeout = '${idleTransactionTimeoutMs(options.timeoutMs)}ms')`,
    );
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
