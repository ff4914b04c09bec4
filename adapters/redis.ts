import type { Cluster, Redis } from 'ioredis';
import type { AdapterPayload } from 'oidc-provider';
import { digest } from '../src/tokens.js';
import { alreadyConsumed, assertStoredModel, fromStored, indexesOf, keptFor, nowSeconds, toStored, type StoreAdapter } from './common.js';

/*
 * Key layout (prefix `idp:` by default; `{idp}:` on a Redis Cluster, see below):
 *   idp:<Model>:<digest(id)>  hash: payload (JSON without jti), consumed, and the entry's
 *                             grantId / uid / userCode, so a script can clean its indexes up
 *   idp:uid:<uid>             Session entry key, same expiry as the entry
 *   idp:userCode:<userCode>   DeviceCode entry key, same expiry as the entry
 *   idp:grant:<grantId>       sorted set of entry keys scored by expiry (ms), living as long as
 *                             its longest-lived member
 * An index may outlive a re-save of its entry under another value; lookups and revocation check
 * the entry's own field instead of trusting the index.
 *
 * Each script declares the key it is called for (and a save every key it writes), then reaches
 * the keys named inside the entries and indexes it reads (an entry's old indexes, a grant's
 * tokens). A Cluster runs a script on one node, and only over keys of one hash slot, so there
 * every key of the adapter carries one hash tag, the prefix's own (`{idp}:AccessToken:…`): all of
 * them live in one slot, on one master (and its replicas), and a grant's revocation stays one
 * atomic script that no refresh-token rotation can interleave with. Outside a Cluster the prefix
 * is left as it is, so existing deployments keep their sessions and tokens.
 */

// Removes an entry with the uid/userCode indexes that still point at it (a newer entry may have
// taken the same value since) and its grant membership.
const REMOVE = `
local function remove(prefix, key)
  local fields = redis.call('HMGET', key, 'uid', 'userCode', 'grantId')
  for i, name in ipairs({'uid', 'userCode'}) do
    local index = fields[i] and prefix .. name .. ':' .. fields[i]
    if index and redis.call('GET', index) == key then redis.call('DEL', index) end
  end
  if fields[3] then redis.call('ZREM', prefix .. 'grant:' .. fields[3], key) end
  redis.call('DEL', key)
end
`;

const DESTROY = `${REMOVE} remove(ARGV[1], KEYS[1])`;

// KEYS[1] is a uid index; ARGV: prefix, uid. The entry it points at goes only if it still has that
// uid; an index left pointing elsewhere is dropped either way.
const DESTROY_BY_UID = `${REMOVE}
local key = redis.call('GET', KEYS[1])
if key and redis.call('HGET', key, 'uid') == ARGV[2] then remove(ARGV[1], key) end
redis.call('DEL', KEYS[1])
`;

// An entry re-saved under another grant is still listed in the old grant's set and must survive.
const REVOKE = `${REMOVE}
for _, key in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  if redis.call('HGET', key, 'grantId') == ARGV[2] then remove(ARGV[1], key) end
end
redis.call('DEL', KEYS[1])
`;

// A compare-and-set: 1 when this call consumed the entry, 0 when it was already consumed or is
// gone. (A bare HSET on an entry that has just expired would also recreate it, without a TTL.)
const CONSUME = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
return redis.call('HSETNX', KEYS[1], 'consumed', ARGV[1])
`;

// A save, whole, in one command: the entry (replaced with its `consumed` and TTL: DEL first),
// its uid/userCode indexes, and its grant's set. Server time, so the set's expiry and its
// entries' TTLs are measured on the same clock; dead members are dropped so a long-lived grant's
// set does not grow with every refresh.
// KEYS: entry, grant set, uid index, userCode index (each named even when its value is absent);
// ARGV: payload, ttl in ms ('' for none), grantId, uid, userCode ('' when absent).
const UPSERT = `
local key, ttl = KEYS[1], ARGV[2]
local indexes = { grantId = ARGV[3], uid = ARGV[4], userCode = ARGV[5] }
local indexKeys = { uid = KEYS[3], userCode = KEYS[4] }
local fields = { 'payload', ARGV[1] }
for _, name in ipairs({ 'grantId', 'uid', 'userCode' }) do
  if indexes[name] ~= '' then fields[#fields + 1] = name; fields[#fields + 1] = indexes[name] end
end
redis.call('DEL', key)
redis.call('HSET', key, unpack(fields))
if ttl ~= '' then redis.call('PEXPIRE', key, ttl) end
for _, name in ipairs({ 'uid', 'userCode' }) do
  if indexes[name] ~= '' then
    local index = indexKeys[name]
    redis.call('SET', index, key)
    if ttl ~= '' then redis.call('PEXPIRE', index, ttl) end
  end
end
if indexes.grantId ~= '' then
  local grant = KEYS[2]
  local t = redis.call('TIME')
  local now = t[1] * 1000 + math.floor(t[2] / 1000)
  redis.call('ZADD', grant, ttl == '' and '+inf' or now + ttl, key)
  redis.call('ZREMRANGEBYSCORE', grant, '-inf', now)
  local last = redis.call('ZRANGE', grant, -1, -1, 'WITHSCORES')[2]
  if last == 'inf' then redis.call('PERSIST', grant) elseif last then redis.call('PEXPIREAT', grant, last) end
end
`;

// Follows an index to its entry in one round trip.
const FIND_BY_INDEX = `
local key = redis.call('GET', KEYS[1])
if not key then return nil end
return redis.call('HMGET', key, 'payload', 'consumed', ARGV[1])
`;

// Reads many entries in one command (KEYS: the entries): each one's payload and consumed, or
// nils. On a Cluster every key carries the prefix's hash tag, so they are all in one slot.
const FIND_MANY = `
local found = {}
for i, key in ipairs(KEYS) do found[i] = redis.call('HMGET', key, 'payload', 'consumed') end
return found
`;

type Stored = string | null;
type Script = (...args: Array<string | number>) => Promise<unknown>;

/**
 * A Lua script sent by its SHA1 (EVALSHA, loaded once per server): saves, consumes and
 * revocations are on the token endpoint's path, and sending the source every time costs both sides.
 */
function script(redis: Redis | Cluster, name: string, lua: string, numberOfKeys: number | 'first argument' = 1): Script {
  const command = `idp${name}`;
  if (!(command in redis)) redis.defineCommand(command, numberOfKeys === 'first argument' ? { lua } : { numberOfKeys, lua });
  const run = (redis as unknown as Record<string, Script>)[command]!;
  return (...args) => run.apply(redis, args);
}

/**
 * The prefix as a hash tag, `idp:` → `{idp}:`, so that every key built on it hashes to the same
 * Cluster slot; a prefix that already has a tag is kept.
 */
export function hashTagged(prefix: string): string {
  if (/\{[^}]+\}/.test(prefix)) return prefix;
  return prefix.endsWith(':') ? `{${prefix.slice(0, -1)}}:` : `{${prefix}}`;
}

/**
 * oidc-provider storage in Redis, keyed by digest(id); expiry is Redis's own. On a Cluster the
 * prefix becomes a hash tag (`hashTagged`).
 */
export function createRedisAdapter(redis: Redis | Cluster, options: { keyPrefix?: string } = {}): (model: string) => StoreAdapter {
  const keyPrefix = redis.isCluster ? hashTagged(options.keyPrefix ?? 'idp:') : (options.keyPrefix ?? 'idp:');
  const grantKey = (grantId: string) => `${keyPrefix}grant:${grantId}`;
  const indexKey = (field: 'uid' | 'userCode', value: string) => `${keyPrefix}${field}:${value}`;
  const upsert = script(redis, 'Upsert', UPSERT, 4);
  const consume = script(redis, 'Consume', CONSUME);
  const destroy = script(redis, 'Destroy', DESTROY);
  const destroyByUid = script(redis, 'DestroyByUid', DESTROY_BY_UID);
  const revoke = script(redis, 'Revoke', REVOKE);
  const findByIndexKey = script(redis, 'FindByIndex', FIND_BY_INDEX);
  // As many keys as ids: their number is the command's first argument.
  const findManyKeys = script(redis, 'FindMany', FIND_MANY, 'first argument');

  return (model) => {
    assertStoredModel(model);
    const entryKey = (id: string) => `${keyPrefix}${model}:${digest(id)}`;

    async function findByIndex(field: 'uid' | 'userCode', value: string): Promise<AdapterPayload | undefined> {
      const found = (await findByIndexKey(indexKey(field, value), field)) as [Stored, Stored, Stored] | null;
      if (!found) return undefined;
      const [payload, consumed, indexed] = found;
      return payload && indexed === value ? fromStored(payload, consumed) : undefined;
    }

    return {
      async upsert(id, payload, expiresIn) {
        const { grantId, uid, userCode } = indexesOf(model, payload);
        const kept = keptFor(model, expiresIn);
        const ttl = kept !== undefined ? Math.round(kept * 1000) : '';
        const keys = [entryKey(id), grantKey(grantId ?? ''), indexKey('uid', uid ?? ''), indexKey('userCode', userCode ?? '')];
        await upsert(...keys, toStored(payload, model), ttl, grantId ?? '', uid ?? '', userCode ?? '');
      },

      async find(id) {
        const [payload, consumed] = await redis.hmget(entryKey(id), 'payload', 'consumed');
        return payload ? fromStored(payload, consumed, id) : undefined;
      },

      async findMany(ids) {
        const found = new Map<string, AdapterPayload>();
        const unique = [...new Set(ids)];
        if (!unique.length) return found;
        const entries = (await findManyKeys(unique.length, ...unique.map(entryKey))) as Array<[Stored, Stored]>;
        entries.forEach(([payload, consumed], i) => {
          if (payload) found.set(unique[i]!, fromStored(payload, consumed, unique[i]));
        });
        return found;
      },

      findByUid: (uid) => findByIndex('uid', uid),
      findByUserCode: (userCode) => findByIndex('userCode', userCode),

      async consume(id) {
        if ((await consume(entryKey(id), nowSeconds())) !== 1) throw alreadyConsumed(model);
      },

      async destroy(id) {
        await destroy(entryKey(id), keyPrefix);
      },

      // A session by the uid it is indexed by: its id (the cookie's value) is known only to its browser.
      async destroyByUid(uid: string) {
        if (model === 'Session') await destroyByUid(indexKey('uid', uid), keyPrefix, uid);
      },

      async revokeByGrantId(grantId) {
        await revoke(grantKey(grantId), keyPrefix, grantId);
      },
    };
  };
}
