import type { Knex } from 'knex';
import type { AdapterPayload } from 'oidc-provider';
import { digest } from '../src/tokens.js';
import { alreadyConsumed, assertStoredModel, fromStored, indexesOf, keptFor, nowSeconds, toStored, type StoreAdapter } from './common.js';

const TABLE = 'oidc_models';

interface Row {
  payload: string;
  consumed_at: string | number | null; // bigint: a string on PostgreSQL
}

/** Restricts a query to rows that have not expired; expires_at is null when there was no expiresIn. */
function unexpired(query: Knex.QueryBuilder): Knex.QueryBuilder {
  const now = nowSeconds();
  return query.where((q) => {
    q.whereNull('expires_at').orWhere('expires_at', '>', now);
  });
}

/** oidc-provider storage in `oidc_models`, keyed by (model, digest(id)). */
export function createSqlAdapter(db: Knex): (model: string) => StoreAdapter {
  return (model) => {
    assertStoredModel(model);

    async function findOne(where: Record<string, string>, id?: string): Promise<AdapterPayload | undefined> {
      const row = (await unexpired(db(TABLE).select('payload', 'consumed_at').where({ model, ...where })).first()) as Row | undefined;
      return row ? fromStored(row.payload, row.consumed_at, id) : undefined;
    }

    return {
      async upsert(id, payload, expiresIn) {
        const kept = keptFor(model, expiresIn);
        const { grantId, uid, userCode } = indexesOf(model, payload);
        await db(TABLE)
          .insert({
            model,
            id: digest(id),
            payload: toStored(payload, model),
            grant_id: grantId ?? null,
            uid: uid ?? null,
            user_code: userCode ?? null,
            expires_at: kept !== undefined ? Math.floor(Date.now() / 1000 + kept) : null,
            consumed_at: null,
          })
          .onConflict(['model', 'id'])
          .merge();
      },

      find: (id) => findOne({ id: digest(id) }, id),
      // One select, however many ids: `id in (…)` on the primary key's second column.
      async findMany(ids) {
        const found = new Map<string, AdapterPayload>();
        const byDigest = new Map(ids.map((id) => [digest(id), id]));
        if (!byDigest.size) return found;
        const rows = (await unexpired(db(TABLE).select('id', 'payload', 'consumed_at').where({ model }).whereIn('id', [...byDigest.keys()]))) as Array<Row & { id: string }>;
        for (const row of rows) found.set(byDigest.get(row.id)!, fromStored(row.payload, row.consumed_at, byDigest.get(row.id)));
        return found;
      },

      findByUid: (uid) => findOne({ uid }),
      findByUserCode: (userCode) => findOne({ user_code: userCode }),

      // A conditional update: its row count says whether this caller was the one that consumed it.
      async consume(id) {
        const changed = await db(TABLE).where({ model, id: digest(id) }).whereNull('consumed_at').update({ consumed_at: nowSeconds() });
        if (changed !== 1) throw alreadyConsumed(model);
      },

      async destroy(id) {
        await db(TABLE).where({ model, id: digest(id) }).del();
      },

      // A session by the uid it is indexed by: its id (the cookie's value) is known only to its browser.
      async destroyByUid(uid: string) {
        await db(TABLE).where({ model, uid }).del();
      },

      // Any model's adapter revokes the whole grant; only grantable rows carry a grant_id.
      async revokeByGrantId(grantId) {
        await db(TABLE).where({ grant_id: grantId }).del();
      },
    };
  };
}

/** Deletes expired rows (reads already ignore them); returns how many. */
export async function pruneExpired(db: Knex): Promise<number> {
  return db(TABLE).where('expires_at', '<=', nowSeconds()).del();
}
