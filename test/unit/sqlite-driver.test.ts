import { createRequire } from 'node:module';
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
});
