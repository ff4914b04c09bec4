import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { hashTagged } from '../../adapters/redis.js';
import { connectRedis } from '../../src/storage.js';
import { describeStorage, clusterSpecific, redisSpecific, redisStorage } from '../adapters/contract.js';
import { startIdp, useHooks } from '../helpers/app.js';
import { CLUSTER_PORTS, describeTopology, keySlot, scanKeys, startCluster } from '../helpers/redis-topologies.js';
import { expectFailsAsRedisOutage, signInLimited, tokenLife } from './flows.js';

describeTopology('Redis Cluster (3 masters)', () => {
  const cluster = useHooks(() => startCluster(), (c) => c.stop());
  const nodes = CLUSTER_PORTS.map((port) => ({ host: '127.0.0.1', port }));

  describeStorage('redis adapter on a Cluster', true, async () => redisStorage(connectRedis({ kind: 'cluster', nodes, password: undefined }, 2000)), (storage) => {
    redisSpecific(storage);
    clusterSpecific(storage);
  });

  it('fails a command to a cluster none of whose nodes answers, as a Redis outage, instead of queueing it for ever', async function () {
    this.timeout(10_000);
    // Ports of this suite's range that nothing listens on.
    await expectFailsAsRedisOutage(connectRedis({ kind: 'cluster', nodes: [7104, 7105, 7106].map((port) => ({ host: '127.0.0.1', port })), password: undefined }, 500));
  });

  describe('the service on a Cluster', () => {
    const prefix = `idp-test:${randomBytes(4).toString('hex')}:`;
    const idp = useHooks(() => startIdp('sqlite', { REDIS_CLUSTER_NODES: cluster.nodes, RATE_LIMIT_SIGNIN_ACCOUNT_IP: '3/1m' }, undefined, prefix), (i) => i.stop());

    it('is ready, with Redis checked', async () => {
      const res = await fetch(`${idp.url}/readyz`);
      expect(res.status).to.equal(200);
      expect(await res.json()).to.deep.include({ checks: { database: 'ok', redis: 'ok' } });
    });

    it('issues, refreshes, serves and revokes tokens, every key of the provider in one hash slot', async () => {
      await tokenLife(idp);
      const redis = idp.idp.redis!;
      expect(redis.isCluster).to.equal(true);
      const tagged = await scanKeys(redis, `${hashTagged(prefix)}*`);
      expect(tagged.some((k) => k.includes(':Session:')), tagged.join(' ')).to.equal(true);
      expect(tagged.some((k) => k.includes(':uid:')), tagged.join(' ')).to.equal(true);
      const slots = new Set(await Promise.all(tagged.map((k) => keySlot(redis, k))));
      expect(slots.size).to.equal(1);
      // Nothing of the provider's lives outside the tag.
      const untagged = (await scanKeys(redis, `${prefix}*`)).filter((k) => !k.startsWith(`${prefix}rl:`));
      expect(untagged).to.deep.equal([]);
    });

    it('limits sign-in failures, with counters spread over the slots', async () => {
      await signInLimited(idp, 3);
      const redis = idp.idp.redis!;
      const counters = await scanKeys(redis, `${prefix}rl:*`);
      expect(counters.length).to.be.at.least(3);
      const slots = new Set(await Promise.all(counters.map((k) => keySlot(redis, k))));
      expect(slots.size, counters.join(' ')).to.be.above(1);
    });
  });
});
