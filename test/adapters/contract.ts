import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { errors, type AdapterPayload } from 'oidc-provider';
import { GRANTABLE, type StoreAdapter } from '../../adapters/common.js';
import { createRedisAdapter, hashTagged } from '../../adapters/redis.js';
import { createSqlAdapter, pruneExpired } from '../../adapters/sql.js';
import type { Db } from '../../src/db/knex.js';
import { digest } from '../../src/tokens.js';
import type { RedisClient } from '../../src/storage.js';
import { freshDatabase } from '../helpers/db.js';
import { keySlot, scanKeys } from '../helpers/redis-topologies.js';

/**
 * The behaviour every oidc-provider adapter owes, run against each storage: adapters.test.ts
 * for SQLite, PostgreSQL and one Redis server, test/redis for a Cluster and Sentinels.
 */

/** A storage under test: its adapter, and what the contract must see of it from outside. */
export interface Storage {
  adapter: (model: string) => StoreAdapter;
  /** Every key and value stored, as one string. */
  dump(): Promise<string>;
  /** An entry's stored expiry in ms since the epoch, null when it has none. */
  expiresAt(model: string, id: string): Promise<number | null>;
  /** Lets time pass as the storage sees it. */
  elapse(ms: number): Promise<void>;
  close(): Promise<void>;
}

const realDateNow = Date.now;

export async function sqlStorage(kind: 'sqlite' | 'postgres'): Promise<Storage & { db: Db }> {
  const database = await freshDatabase(kind);
  const { db } = database;
  return {
    db,
    adapter: createSqlAdapter(db),
    dump: async () => JSON.stringify(await db('oidc_models').select()),
    async expiresAt(model, id) {
      const row = (await db('oidc_models').where({ model, id: digest(id) }).first('expires_at')) as { expires_at: string | number | null };
      return row.expires_at === null ? null : Number(row.expires_at) * 1000;
    },
    // The SQL adapter reads the time from Date.now; the stub is undone after each test.
    async elapse(ms) {
      const offset = Date.now() - realDateNow() + ms;
      Date.now = () => realDateNow() + offset;
    },
    close: () => database.drop(),
  };
}

/**
 * The Redis adapter on `redis` (one server, a Cluster, the master behind Sentinels) under a
 * prefix of its own; on a Cluster its keys carry the prefix as a hash tag.
 */
export async function redisStorage(redis: RedisClient): Promise<Storage & { redis: RedisClient; keyPrefix: string }> {
  const prefix = `test:${randomBytes(6).toString('hex')}:`;
  const keyPrefix = redis.isCluster ? hashTagged(prefix) : prefix;
  const keys = () => scanKeys(redis, `${keyPrefix}*`);
  return {
    redis,
    keyPrefix,
    adapter: createRedisAdapter(redis, { keyPrefix: prefix }),
    async dump() {
      const parts: string[] = [];
      for (const key of await keys()) {
        const type = await redis.type(key);
        const value = type === 'hash' ? await redis.hgetall(key)
          : type === 'zset' ? await redis.zrange(key, 0, '-1')
            : await redis.get(key);
        parts.push(key, JSON.stringify(value));
      }
      return parts.join('\n');
    },
    async expiresAt(model, id) {
      const at = await redis.pexpiretime(`${keyPrefix}${model}:${digest(id)}`);
      if (at === -2) throw new Error(`no ${model} ${id}`);
      return at === -1 ? null : at;
    },
    // The TTL is Redis's, so only a real wait lets it pass.
    elapse: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    async close() {
      // One key at a time: on a Cluster a DEL of many keys must stay within one slot.
      for (const key of await keys()) await redis.del(key);
      redis.disconnect();
    },
  };
}

const newId = () => randomBytes(32).toString('base64url');

/** A payload as oidc-provider hands it over: `jti` is the id. */
function entry(model: string, fields: AdapterPayload = {}): { id: string; payload: AdapterPayload } {
  const id = newId();
  const iat = Math.floor(Date.now() / 1000);
  return { id, payload: { iat, exp: iat + 60, jti: id, kind: model, accountId: 'user-1', clientId: 'app-1', ...fields } };
}

function withoutJti(payload: AdapterPayload): AdapterPayload {
  const { jti: _id, ...rest } = payload;
  return rest;
}

/** The behaviour every adapter owes oidc-provider; `storage` is opened by the enclosing suite. */
function contract(storage: () => Storage) {
  const adapter = (model: string) => storage().adapter(model);

  async function saved(model: string, fields: AdapterPayload = {}, expiresIn = 60) {
    const e = entry(model, fields);
    await adapter(model).upsert(e.id, e.payload, expiresIn);
    return e;
  }

  it('finds an entry by its id with jti restored', async () => {
    const { id, payload } = await saved('AccessToken', { grantId: newId() });
    expect(await adapter('AccessToken').find(id)).to.deep.equal(payload);
  });

  it('returns undefined for an unknown id', async () => {
    expect(await adapter('AccessToken').find(newId())).to.equal(undefined);
  });

  it('finds many entries at once, each with jti restored, and leaves out unknown, expired and other models\' ids', async () => {
    const first = await saved('AccessToken', { grantId: newId() });
    const second = await saved('AccessToken');
    const expired = await saved('AccessToken', {}, 1);
    const other = await saved('RefreshToken');
    await adapter('AccessToken').consume(second.id);
    await storage().elapse(1100);
    const found = await adapter('AccessToken').findMany([first.id, newId(), second.id, expired.id, other.id, first.id]);
    expect([...found.keys()].sort()).to.deep.equal([first.id, second.id].sort());
    expect(found.get(first.id)).to.deep.equal(first.payload);
    expect(found.get(second.id)).to.deep.equal(await adapter('AccessToken').find(second.id));
    expect(found.get(second.id)!.consumed).to.be.a('number');
    expect(await adapter('AccessToken').findMany([])).to.deep.equal(new Map());
  });

  it('stores neither the id nor jti', async () => {
    const token = await saved('RefreshToken', { grantId: newId() });
    const session = await saved('Session', { uid: newId() });
    const dump = await storage().dump();
    expect(dump).to.include(digest(token.id)).and.include(digest(session.id));
    expect(dump).not.to.include(token.id).and.not.include(session.id).and.not.include('jti');
  });

  it('forgets an entry and its uid once expiresIn has passed', async () => {
    const { id, payload } = await saved('Session', { uid: newId() }, 1);
    expect(await adapter('Session').find(id)).to.deep.equal(payload);
    await storage().elapse(1100);
    expect(await adapter('Session').find(id)).to.equal(undefined);
    expect(await adapter('Session').findByUid(payload.uid!)).to.equal(undefined);
  });

  it('stores the expiry expiresIn asks for', async () => {
    const { id } = await saved('AccessToken', {}, 3600);
    expect(await storage().expiresAt('AccessToken', id)).to.be.closeTo(Date.now() + 3_600_000, 2000);
  });

  it('never expires an entry saved without expiresIn', async () => {
    const { id, payload } = entry('Grant');
    await adapter('Grant').upsert(id, payload);
    expect(await storage().expiresAt('Grant', id)).to.equal(null);
    expect(await adapter('Grant').find(id)).to.deep.equal(payload);
  });

  it('marks an entry consumed with the time in epoch seconds', async () => {
    const { id, payload } = await saved('AuthorizationCode', { grantId: newId() });
    const before = Math.floor(Date.now() / 1000);
    await adapter('AuthorizationCode').consume(id);
    const found = await adapter('AuthorizationCode').find(id);
    expect(found?.consumed).to.be.a('number').within(before, Math.floor(Date.now() / 1000));
    expect(found).to.deep.equal({ ...payload, consumed: found?.consumed });
  });

  it('lets exactly one of 16 parallel consumes of one entry win; the others get invalid_grant', async () => {
    const { id } = await saved('RefreshToken', { grantId: newId() });
    const results = await Promise.allSettled(Array.from({ length: 16 }, () => adapter('RefreshToken').consume(id)));
    expect(results.filter((r) => r.status === 'fulfilled')).to.have.length(1);
    for (const r of results.filter((r): r is PromiseRejectedResult => r.status === 'rejected')) {
      expect(r.reason).to.be.instanceOf(errors.InvalidGrant);
      expect(r.reason.error_detail).to.equal('refresh token already used');
    }
  });

  it('refuses to consume an entry a second time, keeping the first time', async () => {
    const { id } = await saved('AuthorizationCode', { grantId: newId() });
    await adapter('AuthorizationCode').consume(id);
    const first = (await adapter('AuthorizationCode').find(id))?.consumed;
    const error = await adapter('AuthorizationCode').consume(id).then(() => undefined, (err: unknown) => err);
    expect(error).to.be.instanceOf(errors.InvalidGrant);
    expect((await adapter('AuthorizationCode').find(id))?.consumed).to.equal(first);
  });

  it('creates nothing when consuming an unknown id, and says it was not consumed', async () => {
    const id = newId();
    const error = await adapter('RefreshToken').consume(id).then(() => undefined, (err: unknown) => err);
    expect(error).to.be.instanceOf(errors.InvalidGrant);
    expect(await storage().dump()).not.to.include(digest(id));
    expect(await adapter('RefreshToken').find(id)).to.equal(undefined);
  });

  it('destroys an entry and its uid index', async () => {
    const { id, payload } = await saved('Session', { uid: newId() });
    await adapter('Session').destroy(id);
    expect(await adapter('Session').find(id)).to.equal(undefined);
    expect(await adapter('Session').findByUid(payload.uid!)).to.equal(undefined);
    expect(await storage().dump()).not.to.include(payload.uid!);
  });

  it('destroys a session by its uid, with its uid index, and leaves other sessions alone', async () => {
    const { id, payload } = await saved('Session', { uid: newId() });
    const other = await saved('Session', { uid: newId() });
    await adapter('Session').destroyByUid(payload.uid!);
    expect(await adapter('Session').find(id)).to.equal(undefined);
    expect(await adapter('Session').findByUid(payload.uid!)).to.equal(undefined);
    expect(await storage().dump()).not.to.include(payload.uid!).and.not.include(digest(id));
    expect(await adapter('Session').find(other.id)).to.deep.equal(other.payload);
  });

  it('destroys nothing by a uid no session has, nor by the uid a re-saved session left', async () => {
    const { id, payload } = await saved('Session', { uid: newId() });
    const moved = { ...payload, uid: newId() };
    await adapter('Session').upsert(id, moved, 60);
    await adapter('Session').destroyByUid(newId());
    await adapter('Session').destroyByUid(payload.uid!);
    expect(await adapter('Session').find(id)).to.deep.equal(moved);
    expect(await adapter('Session').findByUid(moved.uid)).to.deep.equal(withoutJti(moved));
  });

  it('finds a session by uid, without jti', async () => {
    const { payload } = await saved('Session', { uid: newId() });
    expect(await adapter('Session').findByUid(payload.uid!)).to.deep.equal(withoutJti(payload));
  });

  it('finds a re-saved session by its new uid only', async () => {
    const { id, payload } = await saved('Session', { uid: newId() });
    const moved = { ...payload, uid: newId() };
    await adapter('Session').upsert(id, moved, 60);
    expect(await adapter('Session').findByUid(payload.uid!)).to.equal(undefined);
    expect(await adapter('Session').findByUid(moved.uid)).to.deep.equal(withoutJti(moved));
  });

  it('finds a device code by user code, with its jti, so the approval saves over the same entry', async () => {
    const { id, payload } = await saved('DeviceCode', { userCode: 'BCDF-GHJK', grantId: newId() });
    const found = await adapter('DeviceCode').findByUserCode('BCDF-GHJK');
    expect(found).to.deep.equal(payload);
    await adapter('DeviceCode').upsert(id, { ...found, accountId: '7' }, 60);
    expect(await adapter('DeviceCode').find(id)).to.deep.include({ accountId: '7', jti: id });
  });

  it('revokes every grantable token of a grant', async () => {
    const grantId = newId();
    const userCode = newId().slice(0, 8);
    const tokens = await Promise.all([...GRANTABLE].map((model) =>
      saved(model, { grantId, ...(model === 'DeviceCode' ? { userCode } : {}) }).then((e) => ({ model, ...e }))));
    await adapter('RefreshToken').revokeByGrantId(grantId);
    for (const { model, id } of tokens) expect(await adapter(model).find(id), model).to.equal(undefined);
    expect(await adapter('DeviceCode').findByUserCode(userCode)).to.equal(undefined);
  });

  it("leaves another grant's tokens and non-token models alone when revoking", async () => {
    const grantId = newId();
    await saved('AccessToken', { grantId });
    const other = await saved('AccessToken', { grantId: newId() });
    const interaction = await saved('Interaction', { grantId });
    const grant = entry('Grant');
    await adapter('Grant').upsert(grantId, { ...grant.payload, jti: grantId });
    await adapter('AccessToken').revokeByGrantId(grantId);
    expect(await adapter('AccessToken').find(other.id)).to.deep.equal(other.payload);
    expect(await adapter('Interaction').find(interaction.id)).to.deep.equal(interaction.payload);
    expect(await adapter('Grant').find(grantId)).to.deep.equal({ ...grant.payload, jti: grantId });
  });

  it('overwrites an entry saved twice under the same id, consumed mark included', async () => {
    const { id, payload } = await saved('RefreshToken', { grantId: newId() });
    await adapter('RefreshToken').consume(id);
    const second = { ...payload, accountId: 'user-2', scope: 'openid' };
    await adapter('RefreshToken').upsert(id, second, 60);
    expect(await adapter('RefreshToken').find(id)).to.deep.equal(second);
  });

  it('moves an overwritten entry to its new grant', async () => {
    const oldGrant = newId();
    const newGrant = newId();
    const { id, payload } = await saved('AccessToken', { grantId: oldGrant });
    await adapter('AccessToken').upsert(id, { ...payload, grantId: newGrant }, 60);
    await adapter('AccessToken').revokeByGrantId(oldGrant);
    expect(await adapter('AccessToken').find(id)).to.deep.equal({ ...payload, grantId: newGrant });
    await adapter('AccessToken').revokeByGrantId(newGrant);
    expect(await adapter('AccessToken').find(id)).to.equal(undefined);
  });

  it('refuses the Client model', () => {
    expect(() => adapter('Client')).to.throw(/Client/);
  });
}

/** Runs the contract against one storage, reported as pending when it is not configured. */
export function describeStorage<S extends Storage>(name: string, configured: boolean, open: () => Promise<S>, specific?: (storage: () => S) => void) {
  describe(name, function () {
    let opened: S | undefined;
    const storage = () => {
      if (!opened) throw new Error(`${name} is not open`);
      return opened;
    };

    before(async function () {
      if (!configured) this.skip();
      opened = await open();
    });
    afterEach(() => {
      Date.now = realDateNow;
    });
    after(async () => {
      await opened?.close();
    });

    contract(storage);
    specific?.(storage);
  });
}

export function sqlSpecific(storage: () => Storage & { db: Db }) {
  it('prunes only expired rows and returns how many', async () => {
    const { db } = storage();
    const save = async (expiresIn?: number) => {
      const e = entry('AccessToken');
      await storage().adapter('AccessToken').upsert(e.id, e.payload, expiresIn);
      return digest(e.id);
    };
    const [expiring, lasting, permanent] = [await save(1), await save(3600), await save()];
    await storage().elapse(1100);
    const count = async () => Number((await db('oidc_models').count({ n: '*' }).first())?.n);
    const before = await count();
    const pruned = await pruneExpired(db);
    const ids = (await db('oidc_models').pluck('id')) as string[];
    expect(pruned).to.be.at.least(1).and.equal(before - (await count()));
    expect(ids).not.to.include(expiring);
    expect(ids).to.include.members([lasting, permanent]);
  });
}

export function redisSpecific(storage: () => Storage & { redis: RedisClient; keyPrefix: string }) {
  it('keeps a grant index alive as long as its longest-lived token', async () => {
    const { redis, keyPrefix } = storage();
    const grantId = newId();
    const save = (model: string, expiresIn?: number) => {
      const e = entry(model, { grantId });
      return storage().adapter(model).upsert(e.id, e.payload, expiresIn);
    };
    await save('AccessToken', 60);
    await save('RefreshToken', 3600);
    await save('AuthorizationCode', 10);
    expect(await redis.pttl(`${keyPrefix}grant:${grantId}`)).to.be.closeTo(3_600_000, 5000);
    await save('RefreshToken');
    expect(await redis.pttl(`${keyPrefix}grant:${grantId}`)).to.equal(-1);
  });
}

/** On a Cluster: every key the adapter writes, a grant's set and indexes included, hashes to the one slot of its prefix's tag. */
export function clusterSpecific(storage: () => Storage & { redis: RedisClient; keyPrefix: string }) {
  it('keeps every key of the adapter in the one hash slot of its tag', async () => {
    const { redis, keyPrefix } = storage();
    expect(keyPrefix).to.match(/^\{[^}]+\}:$/);
    const grantId = newId();
    for (const model of ['AccessToken', 'RefreshToken', 'Session', 'DeviceCode']) {
      const e = entry(model, { grantId, uid: newId(), ...(model === 'DeviceCode' ? { userCode: newId().slice(0, 8) } : {}) });
      await storage().adapter(model).upsert(e.id, e.payload, 60);
    }
    const keys = await scanKeys(redis, `${keyPrefix}*`);
    expect(keys).to.include(`${keyPrefix}grant:${grantId}`);
    expect(keys.some((k) => k.startsWith(`${keyPrefix}uid:`))).to.equal(true);
    expect(keys.some((k) => k.startsWith(`${keyPrefix}userCode:`))).to.equal(true);
    const slots = new Set(await Promise.all(keys.map((k) => keySlot(redis, k))));
    expect([...slots]).to.deep.equal([await keySlot(redis, keyPrefix.slice(1, keyPrefix.indexOf('}')))]);
  });
}

