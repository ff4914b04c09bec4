import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import knexFactory from 'knex';
import { createDb, migrateLatest, type Db, type DbPooling } from '../../src/db/knex.js';

export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL || undefined;
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL || undefined;
/**
 * Where test databases are created and dropped: the PostgreSQL server itself. Needed when
 * TEST_DATABASE_URL is a pgbouncer, which passes no `create database` (in transaction pooling it
 * could not drop a database its own server connections are in); by default TEST_DATABASE_URL.
 * A database created here is reached at the same name through TEST_DATABASE_URL, so the pooler
 * must forward any database name to this server (pgbouncer: `* = host=… port=…`).
 */
export const TEST_DATABASE_ADMIN_URL = process.env.TEST_DATABASE_ADMIN_URL || TEST_DATABASE_URL;
/** DATABASE_POOLING for TEST_DATABASE_URL: `transaction` when it is a transaction-pooling pgbouncer. */
export const TEST_DATABASE_POOLING: DbPooling = process.env.TEST_DATABASE_POOLING === 'transaction' ? 'transaction' : 'session';

/** The storage profiles every suite runs on: SQLite always, PostgreSQL + Redis when both are configured. */
export type Profile = 'sqlite' | 'postgres+redis';

/**
 * TEST_PROFILES (comma-separated) narrows them, e.g. `postgres+redis` for a CI leg whose SQLite
 * halves run in another leg; naming a profile that is not configured is an error, not a silent skip.
 */
export function profiles(): Profile[] {
  const configured: Profile[] = TEST_DATABASE_URL && TEST_REDIS_URL ? ['sqlite', 'postgres+redis'] : ['sqlite'];
  const only = (process.env.TEST_PROFILES ?? '').split(',').map((name) => name.trim()).filter(Boolean);
  if (only.length === 0) return configured;
  for (const name of only) {
    if (!configured.includes(name as Profile)) throw new Error(`TEST_PROFILES names ${name}, which is not configured here (postgres+redis needs TEST_DATABASE_URL and TEST_REDIS_URL)`);
  }
  return configured.filter((profile) => only.includes(profile));
}

/**
 * A fresh, migrated database of its own (of a profile's kind), named `<name>_<pid>_<random>`: a
 * temporary SQLite file, or a new database created on the PostgreSQL server at `admin` and
 * reached through `server` (the same server unless a pooler stands between). `drop` removes it.
 */
export async function freshDatabase(
  kind: Profile | 'postgres',
  server = TEST_DATABASE_URL,
  name = 'idp_test',
  { admin = server === TEST_DATABASE_URL ? TEST_DATABASE_ADMIN_URL : server, pooling = server === TEST_DATABASE_URL ? TEST_DATABASE_POOLING : 'session' }: { admin?: string; pooling?: DbPooling } = {},
) {
  const unique = `${name}_${process.pid}_${randomBytes(4).toString('hex')}`;
  if (kind === 'sqlite') {
    const file = join(tmpdir(), `${unique}.sqlite3`);
    return migrated(`sqlite:${file}`, kind, () => {
      for (const f of [file, `${file}-wal`, `${file}-shm`]) rmSync(f, { force: true });
    });
  }
  if (!server) throw new Error('a PostgreSQL server URL is needed (TEST_DATABASE_URL)');
  const onServer = knexFactory({ client: 'pg', connection: admin ?? server, pool: { min: 0, max: 1 } });
  await onServer.raw(`create database ${unique}`);
  const url = new URL(server);
  url.pathname = `/${unique}`;
  return migrated(url.toString(), 'postgres', async () => {
    await onServer.raw(`drop database if exists ${unique} with (force)`);
    await onServer.destroy();
  }, pooling);
}

async function migrated(url: string, kind: 'sqlite' | 'postgres', remove: () => unknown, pooling?: DbPooling) {
  const db: Db = createDb(url, undefined, { pooling });
  await migrateLatest(db);
  return {
    url,
    db,
    kind,
    /** DATABASE_POOLING for `url`. */
    pooling: pooling ?? 'session',
    async drop() {
      await db.destroy();
      await remove();
    },
  };
}

export type TestDatabase = Awaited<ReturnType<typeof freshDatabase>>;
