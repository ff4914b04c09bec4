import { createDb, migrateLatest, type Db, type DbPooling } from '../db/knex.js';

/**
 * Runs `work` on the database at `url`, its schema brought up to date first, and always closes
 * it afterwards so that a command exits promptly. Pool warnings are dropped: a one-shot command
 * reports its failure once, itself. `applied` names the migrations this run applied; `pooling` is
 * DATABASE_POOLING.
 */
export async function withDatabase<T>(url: string, work: (db: Db, applied: string[]) => Promise<T>, pooling?: DbPooling): Promise<T> {
  const db = createDb(url, { warn: () => {} }, { pooling });
  try {
    return await work(db, await migrateLatest(db));
  } finally {
    await db.destroy();
  }
}
