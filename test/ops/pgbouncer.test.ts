import { expect } from 'chai';
import knexFactory, { type Knex } from 'knex';
import { createDb, migrateLatest, openDatabase } from '../../src/db/knex.js';
import { migrationSource } from '../../src/db/migrations/index.js';
import { call } from '../helpers/api.js';
import { startIdp, type RunningIdp } from '../helpers/app.js';
import { Browser } from '../helpers/browser.js';
import { freshDatabase, TEST_DATABASE_ADMIN_URL, type TestDatabase } from '../helpers/db.js';
import { makeClient, personalToken, type Client } from '../helpers/factories.js';
import { authorize, basicAuth, oauthTokens, tokenRequest } from '../helpers/oauth.js';
import { startPgBouncer, type PgBouncer } from '../helpers/pgbouncer.js';

/**
 * The service through a real pgbouncer in transaction pooling (DATABASE_POOLING=transaction): a
 * server connection is lent for one transaction, so anything tied to a session (startup
 * parameters, named prepared statements) breaks, and what must hold (migrations and their lock,
 * single-use codes under concurrency) holds only through transactions. PostgreSQL only, with the
 * SQL adapter (no Redis): every oidc-provider model goes through pgbouncer too.
 */

const PARALLEL = 16;

(TEST_DATABASE_ADMIN_URL ? describe : describe.skip)('through pgbouncer in transaction pooling (postgres)', function () {
  this.timeout(60_000);
  let bouncer: PgBouncer;
  let admin: Knex;
  let database: TestDatabase;
  let idp: RunningIdp;
  const created: string[] = [];

  /** A new empty database on the server (dropped after the suite), and its URL through pgbouncer. */
  async function emptyDatabase(settings: Record<string, string> = {}): Promise<string> {
    const name = `idp_pgb_${process.pid}_${created.length}_${Date.now()}`;
    await admin.raw(`create database ${name}`);
    created.push(name);
    for (const [setting, value] of Object.entries(settings)) await admin.raw(`alter database ${name} set ${setting} = '${value}'`);
    const url = new URL(bouncer.urlFor(TEST_DATABASE_ADMIN_URL!));
    url.pathname = `/${name}`;
    return url.toString();
  }

  before(async () => {
    bouncer = await startPgBouncer(TEST_DATABASE_ADMIN_URL!, 'transaction');
    admin = knexFactory({ client: 'pg', connection: TEST_DATABASE_ADMIN_URL!, pool: { min: 0, max: 1 } });
    // Created on the server, migrated and used through pgbouncer.
    database = await freshDatabase('postgres', bouncer.urlFor(TEST_DATABASE_ADMIN_URL!), 'idp_pgb', { admin: TEST_DATABASE_ADMIN_URL!, pooling: 'transaction' });
    idp = await startIdp('postgres+redis', { REDIS_URL: '' }, database);
  });

  after(async () => {
    await idp?.stop();
    await database?.drop();
    for (const name of created) await admin.raw(`drop database if exists ${name} with (force)`);
    await admin?.destroy();
    await bouncer?.stop();
  });

  it('runs through pgbouncer, which pools its database in transaction mode', async () => {
    expect(idp.config.databasePooling).to.equal('transaction');
    expect(idp.config.redis).to.equal(undefined);
    const name = new URL(database.url).pathname.slice(1);
    const pool = (await bouncer.admin('SHOW POOLS')).find((p) => p.database === name);
    expect(pool, bouncer.log()).to.include({ pool_mode: 'transaction' });
    const stats = (await bouncer.admin('SHOW STATS')).find((s) => s.database === name);
    expect(Number(stats?.total_xact_count)).to.be.greaterThan(0);
  });

  it('applied every migration through pgbouncer, and left the migration lock free', async () => {
    const all = await migrationSource.getMigrations([]);
    const rows = await idp.db('knex_migrations').select('name');
    expect(rows.map((r) => r.name)).to.have.members(all);
    expect(await idp.db('knex_migrations_lock').first('is_locked')).to.deep.equal({ is_locked: 0 });
  });

  it('lets three instances migrating one brand-new database at once apply each migration exactly once between them', async () => {
    // knex creates its tables before it takes its lock, so the three also race on `create table`:
    // the losers try again and then wait for the lock (migrateLatest).
    const url = await emptyDatabase();
    const dbs = [1, 2, 3].map(() => createDb(url, { warn: () => {} }, { pooling: 'transaction' }));
    try {
      const applied = await Promise.all(dbs.map((db) => migrateLatest(db)));
      const all = await migrationSource.getMigrations([]);
      expect(applied.flat()).to.have.members(all);
      expect(applied.flat()).to.have.length(all.length);
      const rows = await dbs[0]!('knex_migrations').orderBy('id').select('name');
      expect(rows.map((r) => r.name)).to.deep.equal(all);
    } finally {
      await Promise.all(dbs.map((db) => db.destroy()));
    }
  });

  it('completes an authorization code flow: authorize, sign in, consent, code, token, then /apis/v2 with the token', async () => {
    const client = await makeClient(idp.db);
    const { accessToken, refreshToken } = await oauthTokens(idp.url, client, client.user);
    const me = await call(idp, '/apis/v2/user', { token: accessToken });
    expect(me.status, me.text).to.equal(200);
    expect(me.body.data.username).to.equal(client.user.username);
    const refreshed = await tokenRequest(idp.url, {
      form: { grant_type: 'refresh_token', refresh_token: refreshToken },
      headers: { authorization: basicAuth(client.clientId, client.clientSecret) },
    });
    expect(refreshed.status, refreshed.text).to.equal(200);
  });

  it(`gives one token set for ${PARALLEL} parallel redemptions of one code; the others get invalid_grant`, async () => {
    const client: Client = await makeClient(idp.db);
    const code = (await authorize(new Browser(idp.url), client, client.user)).searchParams.get('code')!;
    const results = await Promise.all(
      Array.from({ length: PARALLEL }, () =>
        tokenRequest(idp.url, {
          form: { grant_type: 'authorization_code', code, redirect_uri: client.redirectUri },
          headers: { authorization: basicAuth(client.clientId, client.clientSecret) },
        }),
      ),
    );
    const won = results.filter((r) => r.status === 200);
    expect(won, JSON.stringify(results.map((r) => [r.status, r.body?.error]))).to.have.length(1);
    for (const lost of results.filter((r) => r.status !== 200)) {
      expect(lost.status).to.equal(400);
      expect(lost.body.error).to.equal('invalid_grant');
    }
  });

  it('answers parallel API calls whose queries are named prepared statements elsewhere (the bearer check, the groups page)', async () => {
    // Each call may get another server connection: a name prepared on one would be missing, or
    // already taken, on the next.
    const client = await makeClient(idp.db);
    const token = await personalToken(idp.db, client.user.id);
    const results = await Promise.all(Array.from({ length: 24 }, (_, i) => call(idp, i % 2 ? '/apis/v2/groups' : '/apis/v2/user', { token })));
    expect(results.map((r) => r.status), JSON.stringify(results.filter((r) => r.status !== 200).map((r) => r.text))).to.deep.equal(results.map(() => 200));
    const groups = results[1]!.body.data.items as Array<{ id: number }>;
    expect(groups.map((g) => g.id)).to.deep.equal([client.group.id]);
  });

  it('refuses to start without DATABASE_POOLING=transaction, saying what to set, instead of failing each request', async () => {
    let refusal: Error | undefined;
    try {
      const db = await openDatabase(database.url, { warn: () => {} }, { timeoutMs: 3000 });
      await db.destroy();
    } catch (err) {
      refusal = err as Error;
    }
    expect(refusal?.message).to.match(/unsupported startup parameter: statement_timeout/);
    expect(refusal?.message).to.include('DATABASE_POOLING=transaction');
  });

  it('warns at start when the database role has no statement limits to stand in for the ones it cannot send', async () => {
    const warnings: string[] = [];
    const db = await openDatabase(database.url, { warn: (m) => warnings.push(String(m)) }, { timeoutMs: 3000, pooling: 'transaction' });
    await db.destroy();
    expect(warnings.join('\n')).to.match(/DATABASE_POOLING=transaction and the database role has no statement_timeout and idle_in_transaction_session_timeout/);
  });

  it('has the server end a long statement when the limits are set on the database, as the notes tell operators to', async () => {
    const url = await emptyDatabase({ statement_timeout: '2s', idle_in_transaction_session_timeout: '60s' });
    const warnings: string[] = [];
    const db = await openDatabase(url, { warn: (m) => warnings.push(String(m)) }, { timeoutMs: 2000, pooling: 'transaction' });
    try {
      expect(warnings).to.deep.equal([]);
      let failure: { code?: string } | undefined;
      await db.raw('select pg_sleep(4)').catch((err: { code?: string }) => (failure = err));
      // 57014: cancelled by the server, not the client's own limit (which comes 500 ms later).
      expect(failure?.code).to.equal('57014');
      expect((await db.raw('select 1 as one')).rows[0].one).to.equal(1);
    } finally {
      await db.destroy();
    }
  });
});
