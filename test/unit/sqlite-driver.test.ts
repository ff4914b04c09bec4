import { mkdtempSync, rmSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import knexFactory from 'knex';
import { knexConfig, requireSqliteDriver, sqliteDriverPackage } from '../../src/db/knex.js';

const require = createRequire(import.meta.url);

interface Driver {
  new (filename: string): { prepare(sql: string): { get(): { v: string } }; close(): void };
}

function sqliteVersionOf(pkg: string): string {
  const Database = require(pkg) as Driver;
  const db = new Database(':memory:');
  try {
    return db.prepare('select sqlite_version() as v').get().v;
  } finally {
    db.close();
  }
}

describe('the SQLite driver', () => {
  it('is better-sqlite3 12 on Node.js 20 and the Node-API build (13) from Node.js 22 on', () => {
    expect(sqliteDriverPackage('20.19.0')).to.equal('better-sqlite3');
    expect(sqliteDriverPackage('20.20.2')).to.equal('better-sqlite3');
    expect(sqliteDriverPackage('22.12.0')).to.equal('better-sqlite3-napi');
    expect(sqliteDriverPackage('24.21.0')).to.equal('better-sqlite3-napi');
    expect(sqliteDriverPackage('26.0.0')).to.equal('better-sqlite3-napi');
  });

  it('is the one the service\'s knex runs its statements on, in this Node.js', async () => {
    // Only the chosen build is loaded: better-sqlite3 13 crashes Node.js 20 on load.
    const db = knexFactory(knexConfig('sqlite::memory:'));
    try {
      expect((db.client as unknown as { driver: unknown }).driver).to.equal(require(sqliteDriverPackage()));
      // What the SQL rate limiter (rate-limiter-flexible) requires of a SQLite knex.
      expect(db.client.config.client).to.equal('better-sqlite3');
      const [row] = (await db.raw('select sqlite_version() as v')) as Array<{ v: string }>;
      expect(row!.v).to.equal(sqliteVersionOf(sqliteDriverPackage()));
    } finally {
      await db.destroy();
    }
  });

  it('that does not load stops start-up with one line naming it and what to do', () => {
    expect(() => requireSqliteDriver('better-sqlite3-not-installed')).to.throw(
      /^the SQLite driver \(better-sqlite3-not-installed\) does not load on Node\.js \d+\.\d+\.\d+: Cannot find (module|package) 'better-sqlite3-not-installed'[^\n]*; run npm ci with the Node\.js that runs the service$/,
    );
  });

  // The service's knex and a second process (as `idp` is) on one file.
  it('lets a transaction that has read write after another process wrote, instead of "database is locked"', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'idp-sqlite-'));
    const file = join(dir, 'two.db');
    const service = knexFactory(knexConfig(`sqlite:${file}`));
    try {
      await service.schema.createTable('rows', (t) => t.string('by'));
      let other: Promise<number | null> | undefined;
      await service.transaction(async (trx) => {
        expect(await trx('rows').count({ n: '*' })).to.deep.equal([{ n: 0 }]);
        // The other process writes between this transaction's read and its write. With a deferred
        // BEGIN its write commits at once and this transaction's insert fails with SQLITE_BUSY;
        // begun IMMEDIATE, the other process waits (busy_timeout) for this one to commit.
        const writer = anotherProcessInserts(file, 'cli');
        other = writer.exited;
        await writer.ready;
        await new Promise((done) => setTimeout(done, 200));
        await trx('rows').insert({ by: 'service' });
      });
      expect(await other).to.equal(0);
      expect((await service('rows').select('by')).map((r: { by: string }) => r.by)).to.deep.equal(['service', 'cli']);
    } finally {
      await service.destroy();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** Starts a process that inserts one row with the same driver and busy_timeout: `ready` once it is about to write, `exited` with its exit code. */
function anotherProcessInserts(file: string, by: string): { ready: Promise<void>; exited: Promise<number | null> } {
  const script = `const D = require(${JSON.stringify(require.resolve(sqliteDriverPackage()))});
const db = new D(process.argv[1]); db.pragma('busy_timeout = 5000');
process.stdout.write('ready\\n');
db.prepare('insert into rows (by) values (?)').run(process.argv[2]);`;
  const child = spawn(process.execPath, ['-e', script, file, by], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<number | null>((done, failed) => {
    child.once('exit', done);
    child.once('error', failed);
  });
  const ready = new Promise<void>((done) => child.stdout.once('data', () => done()));
  return { ready, exited };
}
