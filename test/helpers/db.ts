import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import knexFactory from 'knex';
import { createDb, migrateLatest, type Db } from '../../src/db/knex.js';

export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL || undefined;
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL || undefined;

/** The storage profiles every suite runs on: SQLite always, PostgreSQL + Redis when both are configured. */
export type Profile = 'sqlite' | 'postgres+redis';

export function profiles(): Profile[] {
  return TEST_DATABASE_URL && TEST_REDIS_URL ? ['sqlite', 'postgres+redis'] : ['sqlite'];
}

/**
 * A fresh, migrated database of its own (of a profile's kind), named `<name>_<pid>_<random>`: a
 * temporary SQLite file, or a new database on the PostgreSQL `server`. `drop` removes it.
 */
export async function freshDatabase(kind: Profile | 'postgres', server = TEST_DATABASE_URL, name = 'idp_test') {
  const unique = `${name}_${process.pid}_${randomBytes(4).toString('hex')}`;
  if (kind === 'sqlite') {
    const file = join(tmpdir(), `${unique}.sqlite3`);
    return migrated(`sqlite:${file}`, kind, () => {
      for (const f of [file, `${file}-wal`, `${file}-shm`]) rmSync(f, { force: true });
    });
  }
  if (!server) throw new Error('a PostgreSQL server URL is needed (TEST_DATABASE_URL)');
  const admin = knexFactory({ client: 'pg', connection: server, pool: { min: 0, max: 1 } });
  await admin.raw(`create database ${unique}`);
  const url = new URL(server);
  url.pathname = `/${unique}`;
  return migrated(url.toString(), 'postgres', async () => {
    await admin.raw(`drop database if exists ${unique} with (force)`);
    await admin.destroy();
  });
}

async function migrated(url: string, kind: 'sqlite' | 'postgres', remove: () => unknown) {
  const db: Db = createDb(url);
  await migrateLatest(db);
  return {
    url,
    db,
    kind,
    async drop() {
      await db.destroy();
      await remove();
    },
  };
}

export type TestDatabase = Awaited<ReturnType<typeof freshDatabase>>;
