import type { ChainableCommander, Redis } from 'ioredis';
import type { Adapter, AdapterPayload } from 'oidc-provider';
import { digest } from '../src/tokens.js';
import { assertStoredModel, fromStored, indexesOf, nowSeconds, toStored } from './common.js';

/*
 * Key layout (prefix `idp:` by default):
 *   idp:<Model>:<digest(id)>  hash: payload (JSON without jti), consumed, and the entry's
 *                             grantId / uid / userCode, so a script can clean its indexes up
 *   idp:uid:<uid>             Session entry key, same expiry as the entry
 *   idp:userCode:<userCode>   DeviceCode entry key, same expiry as the entry
 *   idp:grant:<grantId>       sorted set of entry keys scored by expiry (ms), living as long as
 *                             its longest-lived member
 * An index may outlive a re-save of its entry under another value; lookups and revocation check
 * the entry's own field instead of trusting the index. The scripts reach keys they build
 * themselves, which a single Redis allows; Redis Cluster would need hash tags.
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

// An entry re-saved under another grant is still listed in the old grant's set and must survive.
const REVOKE = `${REMOVE}
for _, key in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  if redis.call('HGET', key, 'grantId') == ARGV[2] then remove(ARGV[1], key) end
end
redis.call('DEL', KEYS[1])
`;

// A bare HSET on an entry that has just expired would recreate it, without a TTL.
const CONSUME = `
if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('HSET', KEYS[1], 'consumed', ARGV[1]) end
`;

// Server time, so the set's expiry and its entries' TTLs are measured on the same clock. Dead
// members are dropped so a long-lived grant's set does not grow with every refresh.
const ADD_TO_GRANT = `
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call('ZADD', KEYS[1], ARGV[2] == '' and '+inf' or now + ARGV[2], ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')[2]
if last == 'inf' then redis.call('PERSIST', KEYS[1]) elseif last then redis.call('PEXPIREAT', KEYS[1], last) end
`;

// Follows an index to its entry in one round trip.
const FIND_BY_INDEX = `
local key = redis.call('GET', KEYS[1])
if not key then return nil end
return redis.call('HMGET', key, 'payload', 'consumed', ARGV[1])
`;

type Stored = string | null;

/** MULTI reports a failed command in its reply instead of rejecting. */
async function execOrThrow(tx: ChainableCommander): Promise<void> {
  const failed = (await tx.exec())?.find(([err]) => err);
  if (failed) throw failed[0];
}

/** oidc-provider storage in Redis, keyed by digest(id); expiry is Redis's own. */
export function createRedisAdapter(redis: Redis, { keyPrefix = 'idp:' }: { keyPrefix?: string } = {}): (model: string) => Adapter {
  const grantKey = (grantId: string) => `${keyPrefix}grant:${grantId}`;
  const indexKey = (field: 'uid' | 'userCode', value: string) => `${keyPrefix}${field}:${value}`;

  return (model) => {
    assertStoredModel(model);
    const entryKey = (id: string) => `${keyPrefix}${model}:${digest(id)}`;

    async function findByIndex(field: 'uid' | 'userCode', value: string): Promise<AdapterPayload | undefined> {
      const found = (await redis.eval(FIND_BY_INDEX, 1, indexKey(field, value), field)) as [Stored, Stored, Stored] | null;
      if (!found) return undefined;
      const [payload, consumed, indexed] = found;
      return payload && indexed === value ? fromStored(payload, consumed) : undefined;
    }

    return {
      async upsert(id, payload, expiresIn) {
        const key = entryKey(id);
        const indexes = indexesOf(model, payload);
        const ttl = typeof expiresIn === 'number' ? Math.round(expiresIn * 1000) : undefined;
        // DEL first: a re-save replaces the entry whole, `consumed` and TTL included.
        const tx = redis.multi().del(key).hset(key, { payload: toStored(payload), ...indexes });
        if (ttl !== undefined) tx.pexpire(key, ttl);
        for (const field of ['uid', 'userCode'] as const) {
          const value = indexes[field];
          if (!value) continue;
          tx.set(indexKey(field, value), key);
          if (ttl !== undefined) tx.pexpire(indexKey(field, value), ttl);
        }
        if (indexes.grantId) tx.eval(ADD_TO_GRANT, 1, grantKey(indexes.grantId), key, ttl ?? '');
        await execOrThrow(tx);
      },

      async find(id) {
        const [payload, consumed] = await redis.hmget(entryKey(id), 'payload', 'consumed');
        return payload ? fromStored(payload, consumed, id) : undefined;
      },

      findByUid: (uid) => findByIndex('uid', uid),
      findByUserCode: (userCode) => findByIndex('userCode', userCode),

      async consume(id) {
        await redis.eval(CONSUME, 1, entryKey(id), nowSeconds());
      },

      async destroy(id) {
        await redis.eval(DESTROY, 1, entryKey(id), keyPrefix);
      },

      async revokeByGrantId(grantId) {
        await redis.eval(REVOKE, 1, grantKey(grantId), keyPrefix, grantId);
      },
    };
  };
}
