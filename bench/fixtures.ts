import { createHash, randomBytes } from 'node:crypto';
import { hash as argon2Hash } from '@node-rs/argon2';
import type { Redis } from 'ioredis';
import type { Knex } from 'knex';
import { isPostgres } from '../src/db/knex.js';
import { insertUser } from '../src/db/users.js';
import { hashPassword } from '../src/services/passwords.js';
import { freshDatabase, type TestDatabase } from '../test/helpers/db.js';
import { makeApp, personalToken } from '../test/helpers/factories.js';

/** What the service's scenarios run against: a fresh database of the bench's own, filled in bulk. */
export type BenchDatabase = TestDatabase;

export function createBenchDatabase(kind: 'sqlite' | 'postgres', serverUrl?: string): Promise<BenchDatabase> {
  return freshDatabase(kind, serverUrl, 'idp_bench');
}

export const PASSWORD = 'bench horse battery staple';
export const REDIRECT_URI = 'http://127.0.0.1:9/callback';

/**
 * Sign-in users share one real Argon2id hash (the service's parameters: every verification costs
 * what it costs in production; only the hashing at creation is shared). The `no-kdf` users' hash
 * is Argon2id with m = 8 KiB, t = 1: the same code path with the key derivation made negligible
 * (an Argon2id hash is verified with its own parameters and not rehashed), for the one line of
 * the table that shows what a flow costs apart from the KDF.
 */
function cheapArgon2Hash(password: string): Promise<string> {
  return argon2Hash(password.normalize('NFKC'), { algorithm: 2, memoryCost: 8, timeCost: 1, parallelism: 1 });
}

export interface Seed {
  client: { clientId: string; clientSecret: string; redirectUri: string };
  apiUser: { id: number; login: string; password: string };
  /** A personal access token of the API user (groups:read-only). */
  haToken: string;
  /** Users who have never used the application, for whole flows: each flow takes the next one. */
  flowUsers: { real: string[]; noKdf: string[] };
  groups: number;
}

const at = () => new Date().toISOString();

async function insertUsersBulk(db: Knex, prefix: string, count: number, passwordHash: string): Promise<string[]> {
  const names = Array.from({ length: count }, (_, i) => `${prefix}-${String(i + 1).padStart(6, '0')}`);
  const now = at();
  const rows = names.map((username) => ({
    username,
    username_key: username,
    email: `${username}@bench.example`,
    email_key: `${username}@bench.example`,
    name: username,
    password_hash: passwordHash,
    // Made as an operator makes accounts (the CLI): verified, so the authorization flow lets them through.
    email_verified_at: now,
    created_at: now,
    updated_at: now,
  }));
  await db.batchInsert('users', rows, 400);
  return names;
}

/** Groups `from..to` (1-based numbering of the bench's groups), each with an owner from `ownerIds`, 100 groups per owner. */
async function insertGroupsBulk(db: Knex, from: number, to: number, ownerIds: number[]): Promise<void> {
  const now = at();
  // SQLite allows 500 terms in the compound SELECT knex builds for a multi-row insert.
  const batch = 400;
  for (let start = from; start <= to; start += batch) {
    const end = Math.min(to, start + batch - 1);
    const rows = [];
    for (let n = start; n <= end; n += 1) {
      const path = `bench-group-${String(n).padStart(7, '0')}`;
      rows.push({ name: `Bench group ${n}`, path, description: 'A group of the benchmark', visibility_level: 'private', created_at: now, updated_at: now });
    }
    const inserted = (await db('groups').insert(rows).returning('id')) as Array<{ id: number } | number>;
    const ids = inserted.map((r) => (typeof r === 'number' ? r : r.id));
    const memberships = ids.map((groupId, i) => ({
      group_id: groupId,
      user_id: ownerIds[Math.floor((start + i - 1) / 100) % ownerIds.length]!,
      role: 'owner',
      created_at: now,
    }));
    await db('memberships').insert(memberships);
  }
}

/** Makes the API user a member of `count` groups spread evenly over all of them, with mixed roles. */
async function spreadMemberships(db: Knex, userId: number, count: number): Promise<void> {
  const ids = (await db('groups').orderBy('id').pluck('id')) as number[];
  const roles = ['member', 'maintainer', 'member', 'owner'];
  const chosen = Array.from({ length: count }, (_, i) => ids[Math.floor((i * ids.length) / count) + 1] ?? ids[i]!);
  await db('memberships').where({ user_id: userId }).delete();
  // Another owner may already own a chosen group: the API user joins beside them.
  await db('memberships').insert(chosen.map((groupId, i) => ({ group_id: groupId, user_id: userId, role: roles[i % roles.length], created_at: at() })));
}

async function analyze(db: Knex): Promise<void> {
  await db.raw('analyze');
}

export async function seed(db: Knex, options: { groups: number; memberOf: number; flowUsers: { real: number; noKdf: number } }): Promise<Seed> {
  const realHash = await hashPassword(PASSWORD);
  const [ownerName] = await insertUsersBulk(db, 'bench-owner', 1, realHash);
  const owner = (await db('users').where({ username_key: ownerName }).first('id')) as { id: number };
  const apiUser = await insertUser(db, { username: 'bench-api', email: 'bench-api@bench.example', name: 'Bench API', passwordHash: realHash, at: at(), emailVerified: true });
  await insertGroupsBulk(db, 1, options.groups, [owner.id]);
  await spreadMemberships(db, apiUser.id, options.memberOf);
  const firstGroup = (await db('groups').orderBy('id').first('id')) as { id: number };
  const { clientId, clientSecret } = await makeApp(db, owner.id, firstGroup.id, { name: 'Bench client', callbackURL: REDIRECT_URI });
  const haToken = await personalToken(db, apiUser.id, { name: 'bench', expiresInDays: null });
  const flowUsers = {
    real: await insertUsersBulk(db, 'bench-flow', options.flowUsers.real, realHash),
    noKdf: await insertUsersBulk(db, 'bench-nokdf', options.flowUsers.noKdf, await cheapArgon2Hash(PASSWORD)),
  };
  await analyze(db);
  return {
    client: { clientId, clientSecret, redirectUri: REDIRECT_URI },
    apiUser: { id: apiUser.id, login: 'bench-api', password: PASSWORD },
    haToken,
    flowUsers,
    groups: options.groups,
  };
}

/** Grows the groups table to `total` groups (100 per extra owner), and re-spreads the API user's memberships over all of them. */
export async function growGroups(db: Knex, seeded: Seed, total: number, memberOf: number): Promise<void> {
  const extra = total - seeded.groups;
  if (extra <= 0) return;
  const owners = await insertUsersBulk(db, `bench-owner-${seeded.groups}`, Math.ceil(extra / 100), 'scrypt$2$1$1$AAAA$AAAA');
  const ownerIds = (await db('users').whereIn('username_key', owners).orderBy('id').pluck('id')) as number[];
  await insertGroupsBulk(db, seeded.groups + 1, total, ownerIds);
  await spreadMemberships(db, seeded.apiUser.id, memberOf);
  seeded.groups = total;
  // What autovacuum does on PostgreSQL after a bulk load (and `PRAGMA optimize` on SQLite).
  await analyze(db);
}

export function databaseVersion(db: Knex): Promise<string> {
  return isPostgres(db)
    ? db.raw('show server_version').then((r: { rows: Array<{ server_version: string }> }) => `PostgreSQL ${r.rows[0]!.server_version}`)
    : db.raw('select sqlite_version() as v').then((r: Array<{ v: string }>) => `SQLite ${r[0]!.v}`);
}

/**
 * Writes `count` live access tokens straight into Redis in the adapter's layout (adapters/redis.ts):
 * `<prefix>AccessToken:<digest>` hashes (payload, grantId) with a TTL, and `<prefix>grant:<id>`
 * sorted sets of their keys scored by expiry, `perGrant` tokens a grant, pipelined. The payload
 * is a real one of the service's (`template`) with its own times and grant.
 */
export async function loadLiveTokens(redis: Redis, options: { keyPrefix: string; count: number; template: string; perGrant?: number }): Promise<void> {
  const perGrant = options.perGrant ?? 10;
  const template = JSON.parse(options.template) as Record<string, unknown>;
  const batch = 5000;
  const nowMs = Date.now();
  let grantId = '';
  let grantExpiry = 0;
  for (let start = 0; start < options.count; start += batch) {
    const pipeline = redis.pipeline();
    for (let i = start; i < Math.min(options.count, start + batch); i += 1) {
      if (i % perGrant === 0) {
        if (grantId) pipeline.pexpireat(`${options.keyPrefix}grant:${grantId}`, grantExpiry);
        grantId = randomBytes(32).toString('base64url');
        grantExpiry = 0;
      }
      // Issued some time in the last 50 minutes: 10 to 60 minutes left.
      const ttlMs = 600_000 + Math.floor(Math.random() * 3_000_000);
      const expiresAt = nowMs + ttlMs;
      grantExpiry = Math.max(grantExpiry, expiresAt);
      const key = `${options.keyPrefix}AccessToken:${createHash('sha256').update(`bench-token-${i}-${nowMs}`).digest('base64url')}`;
      const iat = Math.floor((expiresAt - 3_600_000) / 1000);
      const payload = JSON.stringify({ ...template, iat, exp: iat + 3600, grantId });
      pipeline.hset(key, 'payload', payload, 'grantId', grantId);
      pipeline.pexpire(key, ttlMs);
      pipeline.zadd(`${options.keyPrefix}grant:${grantId}`, expiresAt, key);
    }
    if (start + batch >= options.count && grantId) pipeline.pexpireat(`${options.keyPrefix}grant:${grantId}`, grantExpiry);
    const failed = (await pipeline.exec())?.find(([err]) => err);
    if (failed) throw failed[0];
  }
}
