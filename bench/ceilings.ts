import type { IncomingMessage, ServerResponse } from 'node:http';
import { Redis } from 'ioredis';
import Koa from 'koa';
import Provider, { type Configuration } from 'oidc-provider';
import MemoryAdapter from 'oidc-provider/lib/adapters/memory_adapter.js';
import LRU from 'oidc-provider/lib/helpers/lru.js';
import pg from 'pg';

/**
 * The ceilings: what the same machine does with nothing of ours in the way. Each is started in
 * its own process by bench/server.ts, like the service itself.
 */

export interface Target {
  /** The request listener to attach to the HTTP server. */
  callback: (req: IncomingMessage, res: ServerResponse) => unknown;
  close(): Promise<void>;
}

/** ceiling-koa: a bare Koa 3 app answering a small JSON body. */
export function bareKoa(): Target {
  const app = new Koa();
  app.use((ctx) => {
    ctx.body = { status: 'ok' };
  });
  return { callback: app.callback(), close: async () => {} };
}

/**
 * ceiling-io: the same app doing, per request, exactly one Redis GET and then one PostgreSQL
 * primary-key select, over plain `ioredis` and a `pg` pool of 10 (the service's pool size), with
 * no query builder: the least I/O cost a request of ours could have.
 */
export function koaWithIo(options: { databaseUrl: string; redisUrl: string; redisKey: string; userId: number }): Target {
  const pool = new pg.Pool({ connectionString: options.databaseUrl, max: 10 });
  const redis = new Redis(options.redisUrl);
  const app = new Koa();
  app.use(async (ctx) => {
    const value = await redis.get(options.redisKey);
    const { rows } = await pool.query('select id, username from users where id = $1', [options.userId]);
    ctx.body = { status: 'ok', value, user: rows[0] };
  });
  return {
    callback: app.callback(),
    async close() {
      redis.disconnect();
      await pool.end();
    },
  };
}

/**
 * ceiling-io-page: the same I/O as ceiling-io, but the query is the API's page of groups (the
 * service's own SQL for PostgreSQL, a named statement) and the answer is those 20 groups as the
 * API presents them: what the API's payload costs with nothing else of the service around it.
 */
export function koaWithIoPage(options: { databaseUrl: string; redisUrl: string; redisKey: string; userId: number }): Target {
  const pool = new pg.Pool({ connectionString: options.databaseUrl, max: 10 });
  const redis = new Redis(options.redisUrl);
  const text = [
    'select g.id, g.name, g.path, g.description, g.visibility_level,',
    '(extract(epoch from g.created_at) * 1000)::float8 as created_at, (extract(epoch from g.updated_at) * 1000)::float8 as updated_at,',
    'm.role, count(*) over () as total_count',
    'from memberships m join "groups" g on g.id = m.group_id where m.user_id = $1 order by g.id asc limit $2 offset $3',
  ].join(' ');
  interface Row { id: number; name: string; path: string; description: string; visibility_level: string; created_at: number; updated_at: number; role: string; total_count: string }
  const app = new Koa();
  app.use(async (ctx) => {
    await redis.get(options.redisKey);
    const { rows } = await pool.query<Row>({ name: 'page', text, values: [options.userId, 20, 0] });
    ctx.body = {
      data: {
        total: Number(rows[0]?.total_count ?? 0),
        items: rows.map((r) => ({
          id: r.id,
          name: r.name,
          path: r.path,
          description: r.description,
          visibilityLevel: r.visibility_level,
          createdAt: new Date(r.created_at).toISOString(),
          updatedAt: new Date(r.updated_at).toISOString(),
          role: r.role,
        })),
      },
      pageNumber: 1,
      pageSize: 20,
    };
  });
  return {
    callback: app.callback(),
    async close() {
      redis.disconnect();
      await pool.end();
    },
  };
}

export const RAW_CLIENT = {
  clientId: 'bench-raw-client',
  clientSecret: 'bench-raw-client-secret-0123456789abcdefghijklmnop',
  redirectUri: 'http://127.0.0.1:9/callback',
};

/**
 * ceiling-oidc: raw oidc-provider with its memory adapter and default settings, except:
 * - a 600 s authorization code TTL (the default is 60 s; codes are minted before the run);
 * - sign-in and consent finish by themselves (devInteractions off; /interaction/:uid answers at
 *   once with a fresh account on the login prompt and a grant of what was asked on consent);
 * - the memory adapter's LRU holds 500,000 entries instead of 1,000, or the codes minted
 *   beforehand would be evicted by the tokens of the first few hundred exchanges;
 * - a new grant at every consent (see autoInteraction).
 * It is the same adapter class and LRU the library uses by default, in the same process.
 */
export function rawProvider(issuer: string): Target {
  const store = new LRU({ maxSize: 500_000 });
  const configuration: Configuration = {
    adapter: ((model: string) => new MemoryAdapter(model, store, 15)) as unknown as Configuration['adapter'],
    clients: [
      {
        client_id: RAW_CLIENT.clientId,
        client_secret: RAW_CLIENT.clientSecret,
        redirect_uris: [RAW_CLIENT.redirectUri],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
      },
    ],
    ttl: { AuthorizationCode: 600 },
    features: { devInteractions: { enabled: false } },
  };
  const provider = new Provider(issuer, configuration);
  let accounts = 0;
  provider.use(async function autoInteraction(ctx, next) {
    const match = /^\/interaction\/([^/]+)$/.exec(ctx.path);
    if (!match || ctx.method !== 'GET') return next();
    const details = await provider.interactionDetails(ctx.req, ctx.res);
    ctx.respond = false;
    if (details.prompt.name === 'login') {
      accounts += 1;
      await provider.interactionFinished(ctx.req, ctx.res, { login: { accountId: `account-${process.pid}-${accounts}` } }, { mergeWithLastSubmission: false });
      return;
    }
    // A grant of its own for every consent, as every person has: a grant the library's memory
    // adapter indexes thousands of codes and tokens under gets slower with each one.
    const grant = new provider.Grant({ accountId: details.session!.accountId, clientId: String(details.params.client_id) });
    grant.addOIDCScope(String(details.params.scope ?? ''));
    const grantId = await grant.save();
    await provider.interactionFinished(ctx.req, ctx.res, { consent: { grantId } }, { mergeWithLastSubmission: true });
  });
  return { callback: provider.callback(), close: async () => {} };
}
