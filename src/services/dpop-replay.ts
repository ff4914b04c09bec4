import { hash } from 'node:crypto';
import type { Knex } from 'knex';
import { claimDpopProof } from '../db/dpop-proofs.js';
import type { RedisClient } from '../storage.js';

/**
 * Where the API remembers the DPoP proofs it has accepted, so that one proof is accepted once,
 * whichever instance sees it: Redis when the service has it (`SET … NX EX`, one key, so a Cluster
 * is no different), the SQL database otherwise (`dpop_proofs`, pruned with the other expired
 * rows). A proof is named by the key that signed it and its `jti`.
 */
export interface DpopReplay {
  /** True the first time a proof is seen while it is remembered (`ttlS` seconds); false after. */
  claim(jkt: string, jti: string, ttlS: number): Promise<boolean>;
}

export function dpopReplay(db: Knex, redis: RedisClient | undefined, redisKeyPrefix = 'idp:'): DpopReplay {
  const digest = (jkt: string, jti: string) => hash('sha256', `${jkt}\u0000${jti}`, 'base64url');
  if (redis) {
    return {
      async claim(jkt, jti, ttlS) {
        const set = await redis.set(`${redisKeyPrefix}dpop:${digest(jkt, jti)}`, '1', 'EX', Math.max(1, Math.ceil(ttlS)), 'NX');
        return set === 'OK';
      },
    };
  }
  return {
    claim: (jkt, jti, ttlS) => claimDpopProof(db, digest(jkt, jti), Date.now() + Math.max(1, Math.ceil(ttlS)) * 1000),
  };
}
