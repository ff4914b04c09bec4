import { PassThrough } from 'node:stream';
import { expect } from 'chai';
import { main } from '../../src/cli/main.js';
import type { CookieSigner } from '../../src/cookie-signing.js';
import { loadOrCreateKeys } from '../../src/provider/keys.js';
import { describeEachProfile, startIdp, type Profile } from '../helpers/app.js';
import { freshDatabase } from '../helpers/db.js';
import type { TestDatabase } from '../helpers/db.js';

const SECRET = 'a-keys-secret-of-at-least-32-characters!';
const OTHER_SECRET = 'another-keys-secret-of-32-characters-or-more';

async function keyRows(t: TestDatabase): Promise<Array<{ id: number; kind: string; material: string }>> {
  return t.db('keys').select('id', 'kind', 'material').orderBy('id');
}

/** The published signing keys' ids and the cookie keys, as a started instance sees them. */
async function keysOfAnInstance(profile: Profile, t: TestDatabase, env: Record<string, string>) {
  const server = await startIdp(profile, env, t);
  try {
    const jwks = (await (await fetch(`${server.url}/login/oauth/jwks`)).json()) as { keys: Array<{ kid: string }> };
    return { kids: jwks.keys.map((k) => k.kid), cookieKeys: [...(server.idp.app.keys as unknown as CookieSigner).keys] };
  } finally {
    await server.stop();
  }
}

async function cli(t: TestDatabase, args: string[], env: Record<string, string> = {}) {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (c: Buffer) => (out += c.toString()));
  stderr.on('data', (c: Buffer) => (err += c.toString()));
  const code = await main(args, { stdin: new PassThrough(), stdout, stderr, env: { DATABASE_URL: t.url, DATABASE_POOLING: t.pooling, NODE_ENV: 'test', ...env } });
  return { code, stdout: out, stderr: err };
}

describeEachProfile('signing and cookie keys at rest', (profile) => {
  let t: TestDatabase;
  // Each test starts from a database of its own: the keys are what it looks at.
  beforeEach(async () => {
    t = await freshDatabase(profile);
  });
  afterEach(() => t.drop());

  it('stores no key in clear when KEYS_SECRET is set', async () => {
    const { cookieKeys } = await keysOfAnInstance(profile, t, { KEYS_SECRET: SECRET });
    const rows = await keyRows(t);
    expect(rows.map((r) => r.kind).sort()).to.deep.equal(['cookie', 'signing']);
    for (const row of rows) {
      expect(row.material).to.match(/^enc:v1:/);
      expect(row.material).to.not.include('"d"').and.not.include('"kty"');
      for (const key of cookieKeys) expect(row.material).to.not.include(key);
    }
  });

  it('stores keys in clear without KEYS_SECRET (development)', async () => {
    await keysOfAnInstance(profile, t, {});
    const signing = (await keyRows(t)).find((r) => r.kind === 'signing')!;
    expect(JSON.parse(signing.material)).to.include({ kty: 'RSA', use: 'sig' });
  });

  it('encrypts keys stored in clear on the first start that has KEYS_SECRET, keeping the same keys', async () => {
    const before = await keysOfAnInstance(profile, t, {});
    const after = await keysOfAnInstance(profile, t, { KEYS_SECRET: SECRET });
    expect(after).to.deep.equal(before);
    for (const row of await keyRows(t)) expect(row.material).to.match(/^enc:v1:/);
  });

  it('starts again with the same KEYS_SECRET and the same keys', async () => {
    const first = await keysOfAnInstance(profile, t, { KEYS_SECRET: SECRET });
    const stored = await keyRows(t);
    const second = await keysOfAnInstance(profile, t, { KEYS_SECRET: SECRET });
    expect(second).to.deep.equal(first);
    expect(await keyRows(t)).to.deep.equal(stored);
  });

  it('refuses to start with another KEYS_SECRET, naming KEYS_SECRET, and changes no row', async () => {
    await loadOrCreateKeys(t.db, SECRET);
    await t.db('keys').insert({ kind: 'signing', material: '{"kty":"RSA","kid":"clear-one"}', created_at: new Date().toISOString() });
    const stored = await keyRows(t);
    await loadOrCreateKeys(t.db, OTHER_SECRET).then(
      () => expect.fail('started with the wrong secret'),
      (err: Error) => expect(err.message).to.match(/^KEYS_SECRET does not decrypt the signing and cookie keys/),
    );
    expect(await keyRows(t)).to.deep.equal(stored);
  });

  it('refuses to start without KEYS_SECRET once the keys are encrypted, naming KEYS_SECRET', async () => {
    await loadOrCreateKeys(t.db, SECRET);
    await loadOrCreateKeys(t.db).then(
      () => expect.fail('started without the secret'),
      (err: Error) => expect(err.message).to.include('set KEYS_SECRET'),
    );
  });

  it('adds an encrypted signing key with `idp keys rotate` when KEYS_SECRET is set', async () => {
    await loadOrCreateKeys(t.db, SECRET);
    const run = await cli(t, ['keys', 'rotate', '--json'], { KEYS_SECRET: SECRET });
    expect(run.code, run.stderr).to.equal(0);
    const { kid } = JSON.parse(run.stdout) as { kid: string };
    const newest = (await keyRows(t)).at(-1)!;
    expect(newest.material).to.match(/^enc:v1:/);
    const keys = await loadOrCreateKeys(t.db, SECRET);
    expect(keys.signing[0]).to.include({ kid });
  });

  it('refuses `idp keys rotate` without KEYS_SECRET once the keys are encrypted (exit 2)', async () => {
    await loadOrCreateKeys(t.db, SECRET);
    const count = (await keyRows(t)).length;
    const run = await cli(t, ['keys', 'rotate']);
    expect(run.code).to.equal(2);
    expect(run.stderr).to.include('KEYS_SECRET');
    expect(await keyRows(t)).to.have.length(count);
  });
});
