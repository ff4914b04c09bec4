import { expect } from 'chai';
import { Redis } from 'ioredis';
import knexFactory from 'knex';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from './helpers/db.js';

/**
 * Says in the test report whether the PostgreSQL + Redis profile ran: without TEST_DATABASE_URL
 * and TEST_REDIS_URL its suites are not defined, and this test is reported as pending.
 */
describe('PostgreSQL + Redis storage profile', () => {
  it('is reachable, so every suite also ran on PostgreSQL + Redis', async function () {
    if (!TEST_DATABASE_URL || !TEST_REDIS_URL) this.skip();
    const db = knexFactory({ client: 'pg', connection: TEST_DATABASE_URL, pool: { min: 0, max: 1 } });
    const redis = new Redis(TEST_REDIS_URL!, { lazyConnect: true, maxRetriesPerRequest: 1 });
    try {
      const { rows } = await db.raw('select 1 as one');
      expect(rows[0].one).to.equal(1);
      await redis.connect();
      expect(await redis.ping()).to.equal('PONG');
    } finally {
      redis.disconnect();
      await db.destroy();
    }
  });
});
