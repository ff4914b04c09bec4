import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rmSync } from 'node:fs';
import knexFactory from 'knex';
import { createDb, migrateLatest, type Db } from '../../src/db/knex.js';

export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL || undefined;
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL || undefined;

export interface TestDatabase {
  url: string;
  db: Db;
  kind: 'sqlite' | 'postgres';
  drop(): Promise<void>;
}

/**
 * A fresh, migrated database of its own: a temporary SQLite file, or, when `kind` is postgres, a
 * new database on the TEST_DATABASE_URL server, dropped afterwards.
 */
export async function freshDatabase(kind: 'sqlite' | 'postgres' = TEST_DATABASE_URL ? 'postgres' : 'sqlite'): Promise<TestDatabase> {
  const suffix = `${process.pid}_${randomBytes(4).toString('hex')}`;
  if (kind === 'sqlite') {
    const file = join(tmpdir(), `idp-test-${suffix}.sqlite3`);
    const url = `sqlite:${file}`;
    const db = createDb(url);
    await migrateLatest(db);
    return {
      url,
      db,
      kind,
      async drop() {
        await db.destroy();
        for (const f of [file, `${file}-wal`, `${file}-shm`]) rmSync(f, { force: true });
      },
    };
  }
  if (!TEST_DATABASE_URL) throw new Error('TEST_DATABASE_URL is not set');
  const name = `idp_test_${suffix}`;
  const admin = knexFactory({ client: 'pg', connection: TEST_DATABASE_URL, pool: { min: 0, max: 1 } });
  await admin.raw(`create database ${name}`);
  const url = new URL(TEST_DATABASE_URL);
  url.pathname = `/${name}`;
  const db = createDb(url.toString());
  await migrateLatest(db);
  return {
    url: url.toString(),
    db,
    kind,
    async drop() {
      await db.destroy();
      await admin.raw(`drop database if exists ${name} with (force)`);
      await admin.destroy();
    },
  };
}

/** The storage profiles to run a suite against: SQLite always, PostgreSQL when configured. */
export function databaseKinds(): Array<'sqlite' | 'postgres'> {
  return TEST_DATABASE_URL ? ['sqlite', 'postgres'] : ['sqlite'];
}
