import { expect } from 'chai';
import Koa from 'koa';
import request from 'supertest';
import { apiErrors } from '../../src/api/errors.js';
import type { GroupRow } from '../../src/db/groups.js';
import type { Db } from '../../src/db/knex.js';
import { providerFaults, recordProviderFault } from '../../src/provider/faults.js';
import { webErrors } from '../../src/web/errors.js';
import { call, expectApiError } from '../helpers/api.js';
import { describeEachProfile, useDatabase, useIdp, type RunningIdp } from '../helpers/app.js';
import { signIn } from '../helpers/browser.js';
import { makeGroup, makeUser, personalToken, type TestUser } from '../helpers/factories.js';
import { errorMessage } from '../helpers/html.js';

/** A real "data exception" of the driver: PostgreSQL's 22003 (integer out of range), SQLite's SQLITE_MISMATCH. */
async function databaseValueError(db: Db): Promise<unknown> {
  try {
    if (db.client.config.client === 'pg') await db.raw('select ?::integer as n', ['99999999999']);
    else await db.raw("insert into keys (id, kind, material, created_at) values ('not a number', 'cookie', 'x', '2020-01-01')");
  } catch (err) {
    return err;
  }
  throw new Error('the database accepted the value');
}

describeEachProfile('a value the database refuses becomes a 400', (profile) => {
  const database = useDatabase(profile);

  function appThrowing(handler: Koa.Middleware, err: unknown): Koa {
    const app = new Koa();
    app.use(handler);
    app.use(() => {
      throw err;
    });
    return app;
  }

  it('answers the API with 400 invalid_request, not 500', async () => {
    const err = await databaseValueError(database.db);
    const res = await request(appThrowing(apiErrors(() => {}) as Koa.Middleware, err).callback()).get('/x');
    expect(res.status).to.equal(400);
    expect(res.body.error).to.equal('invalid_request');
  });

  it('answers a page with the 400 error page, not 500', async () => {
    const err = await databaseValueError(database.db);
    const res = await request(appThrowing(webErrors(() => {}) as Koa.Middleware, err).callback()).get('/x');
    expect(res.status).to.equal(400);
    expect(errorMessage(res.text)).to.match(/out of range, too long or not allowed/);
  });

  it('answers the provider with 400 invalid_request when the refusal escapes its steps', async () => {
    const err = await databaseValueError(database.db);
    const res = await request(appThrowing(providerFaults(() => {}, () => {}) as Koa.Middleware, err).callback()).get('/x');
    expect(res.status).to.equal(400);
    expect(res.body.error).to.equal('invalid_request');
  });

  it('turns the provider\'s 500 server_error for a refused value into 400 invalid_request', async () => {
    const err = await databaseValueError(database.db);
    const app = new Koa();
    app.use(providerFaults(() => {}, () => {}) as Koa.Middleware);
    app.use((ctx) => {
      // What the library's route error handler does with a fault: 500, then the server_error event.
      ctx.status = 500;
      ctx.body = { error: 'server_error', error_description: 'oops' };
      recordProviderFault(ctx, err, () => {});
    });
    const res = await request(app.callback()).get('/x');
    expect(res.status).to.equal(400);
    expect(res.body.error).to.equal('invalid_request');
  });
});

describeEachProfile('ids, values and addresses at the edge', (profile) => {
  const server = useIdp(profile);
  let owner: TestUser;
  let group: GroupRow;

  before(async () => {
    owner = await makeUser(server.db);
    group = await makeGroup(server.db, owner.id);
  });

  describe('integer ids', () => {
    it('refuses an API id above 2^31-1 with 400 naming it, before the database', async () => {
      const token = await personalToken(server.db, owner.id);
      const res = await call(server, '/apis/v2/groups/2147483648', { token });
      expectApiError(res, 400, 'invalid_request');
      expect(res.body.error_description).to.equal('id must be an integer from 1 to 2147483647');
    });

    it('answers a page\'s member id above 2^31-1 with 404, not 500', async () => {
      const browser = await signIn(server.url, owner);
      await browser.get(`/groups/${group.path}/settings/members`);
      const res = await browser.submit(`/groups/${group.path}/settings/members/9999999999/remove`);
      expect(res.status).to.equal(404);
    });
  });
});

describeEachProfile('the client address in the audit log', (profile) => {
  async function auditIpAfterCreatingAnApp(server: RunningIdp, forwardedFor: string): Promise<{ status: number; ip: string | null }> {
    const owner = await makeUser(server.db);
    const group = await makeGroup(server.db, owner.id);
    const token = await personalToken(server.db, owner.id, { scopes: ['groups:read-write'] });
    const res = await call(server, `/apis/v2/groups/${group.id}/oauth-apps`, {
      token,
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': forwardedFor },
      body: JSON.stringify({ name: 'Audited', homepageURL: 'https://a.example', callbackURL: 'https://a.example/cb' }),
    });
    const row = await server.db('audit_events').where({ group_id: group.id, action: 'app.create' }).first();
    return { status: res.status, ip: row?.ip ?? null };
  }

  describe('TRUST_PROXY=1', () => {
    const server = useIdp(profile, { TRUST_PROXY: '1' });

    it('records the address the one trusted proxy saw', async () => {
      expect(await auditIpAfterCreatingAnApp(server, '198.51.100.1, 203.0.113.9')).to.deep.equal({ status: 201, ip: '203.0.113.9' });
    });

    it('records the socket address when the forwarded one is an over-long non-address, and the change still succeeds', async () => {
      expect(await auditIpAfterCreatingAnApp(server, 'x'.repeat(4000))).to.deep.equal({ status: 201, ip: '127.0.0.1' });
    });
  });

  describe('TRUST_PROXY=0 (the default)', () => {
    const server = useIdp(profile);

    it('ignores X-Forwarded-For and records the socket address', async () => {
      expect(await auditIpAfterCreatingAnApp(server, '203.0.113.9')).to.deep.equal({ status: 201, ip: '127.0.0.1' });
    });
  });
});
