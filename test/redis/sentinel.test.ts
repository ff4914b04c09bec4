import { expect } from 'chai';
import { Redis } from 'ioredis';
import { connectRedis } from '../../src/storage.js';
import { describeStorage, redisSpecific, redisStorage } from '../adapters/contract.js';
import { startIdp, useHooks, waitFor } from '../helpers/app.js';
import { makeClient } from '../helpers/factories.js';
import { oauthTokens } from '../helpers/oauth.js';
import { call } from '../helpers/api.js';
import { describeTopology, SENTINEL_MASTER_PORT, SENTINEL_NAME, SENTINEL_PORTS, SENTINEL_REPLICA_PORT, startSentinels } from '../helpers/redis-topologies.js';
import { expectFailsAsRedisOutage, signInLimited, tokenLife } from './flows.js';

describeTopology('Redis Sentinel (a master, a replica, 3 sentinels)', () => {
  const sentinels = useHooks(() => startSentinels(), (s) => s.stop());
  const addresses = SENTINEL_PORTS.map((port) => ({ host: '127.0.0.1', port }));

  describeStorage('redis adapter behind Sentinels', true, async () => redisStorage(connectRedis({ kind: 'sentinel', sentinels: addresses, name: SENTINEL_NAME, password: undefined }, 2000)), redisSpecific);

  it('fails a command when the sentinels name no master, as a Redis outage, instead of queueing it for ever', async function () {
    this.timeout(10_000);
    await expectFailsAsRedisOutage(connectRedis({ kind: 'sentinel', sentinels: addresses, name: 'nosuchmaster', password: undefined }, 500));
  });

  describe('the service behind Sentinels', () => {
    const idp = useHooks(() => startIdp('sqlite', { REDIS_SENTINELS: sentinels.sentinels, REDIS_SENTINEL_NAME: sentinels.name, RATE_LIMIT_SIGNIN_ACCOUNT_IP: '3/1m' }), (i) => i.stop());

    it('is ready, with Redis checked', async () => {
      const res = await fetch(`${idp.url}/readyz`);
      expect(res.status).to.equal(200);
      expect(await res.json()).to.deep.include({ checks: { database: 'ok', redis: 'ok' } });
    });

    it('issues, refreshes, serves and revokes tokens', async () => {
      await tokenLife(idp);
    });

    it('limits sign-in failures', async () => {
      await signInLimited(idp, 3);
    });

    it('keeps working after a failover: tokens issued before it still work, and new flows complete', async () => {
      expect(await sentinels.masterPort()).to.equal(SENTINEL_MASTER_PORT);
      const client = await makeClient(idp.db);
      const before = await oauthTokens(idp.url, client, client.user);
      expect((await call(idp, '/apis/v2/user', { token: before.accessToken })).status).to.equal(200);

      expect(await sentinels.failover()).to.equal(SENTINEL_REPLICA_PORT);
      // Requests during the switch may be refused (503); the service follows the new master by itself.
      await waitFor(async () => (await fetch(`${idp.url}/readyz`)).status === 200, () => '/readyz never answered 200 after the failover', 20_000);
      // The service's writes land on the new master (read there directly).
      const probe = `failover-probe-${process.pid}`;
      const newMaster = new Redis({ host: '127.0.0.1', port: SENTINEL_REPLICA_PORT });
      try {
        await waitFor(async () => {
          const value = String(Math.random());
          await idp.idp.redis!.set(probe, value).catch(() => undefined);
          return (await newMaster.get(probe)) === value;
        }, () => 'the service never wrote to the new master', 20_000);
        await newMaster.del(probe);
      } finally {
        newMaster.disconnect();
      }

      expect((await call(idp, '/apis/v2/user', { token: before.accessToken })).status).to.equal(200);
      await tokenLife(idp, client);
    });
  });
});
