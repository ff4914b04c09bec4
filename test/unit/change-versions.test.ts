import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { Redis } from 'ioredis';
import { ChangeVersions } from '../../src/services/change-versions.js';
import { TEST_REDIS_URL } from '../helpers/db.js';

/**
 * The versioned cache on a real Redis: what it serves from memory and when it must read the truth
 * again. (Across two server processes: test/interop/two-instances.test.ts.)
 */
(TEST_REDIS_URL ? describe : describe.skip)('change versions (Redis)', () => {
  let redis: Redis;
  let prefix: string;
  let versions: ChangeVersions;
  let truth: Map<string, string>;
  let loads: number;
  const load = async (key: string) => {
    loads += 1;
    await new Promise((resolve) => setTimeout(resolve, 20));
    const value = truth.get(key);
    if (value === 'fail') throw new Error('database away');
    return value;
  };

  before(() => {
    redis = new Redis(TEST_REDIS_URL!);
  });
  after(async () => {
    await redis.quit();
  });
  beforeEach(() => {
    prefix = `idp-test:${randomBytes(4).toString('hex')}:`;
    versions = new ChangeVersions(redis, prefix);
    truth = new Map([['a', 'first']]);
    loads = 0;
  });
  afterEach(async () => {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
  });

  it('serves an entry from memory while its versions are unchanged, and reads again once one is replaced', async () => {
    const cache = versions.cache(load);
    expect(await cache.get('a', ['app:a', 'user:1'])).to.equal('first');
    truth.set('a', 'second');
    expect(await cache.get('a', ['app:a', 'user:1'])).to.equal('first');
    expect(loads).to.equal(1);
    await versions.bump(['user:1']);
    expect(await cache.get('a', ['app:a', 'user:1'])).to.equal('second');
    expect(loads).to.equal(2);
  });

  it('sees a version replaced by another process (another client of the same Redis)', async () => {
    const cache = versions.cache(load);
    await cache.get('a', ['app:a']);
    truth.set('a', 'second');
    await new ChangeVersions(redis, prefix).bump(['app:a']);
    expect(await cache.get('a', ['app:a'])).to.equal('second');
  });

  it('makes one load for requests that miss at once with the same versions', async () => {
    const cache = versions.cache(load);
    const answers = await Promise.all(Array.from({ length: 16 }, () => cache.get('a', ['app:a'])));
    expect(answers).to.deep.equal(Array(16).fill('first'));
    expect(loads).to.equal(1);
  });

  it('fails at once, for a moment, after a load failed; then reads again', async () => {
    const cache = versions.cache(load);
    truth.set('a', 'fail');
    await cache.get('a', ['app:a']).then(
      () => expect.fail('the load should have failed'),
      (err: Error) => expect(err.message).to.equal('database away'),
    );
    truth.set('a', 'back');
    await cache.get('a', ['app:a']).then(
      () => expect.fail('the failure should have been remembered'),
      (err: Error) => expect(err.message).to.equal('database away'),
    );
    expect(loads).to.equal(1);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect(await cache.get('a', ['app:a'])).to.equal('back');
    expect(loads).to.equal(2);
  });
});
