import { expect } from 'chai';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from 'jose';
import { startIdp, waitFor, type Profile, type RunningIdp } from '../helpers/app.js';
import { Browser } from '../helpers/browser.js';
import { idp as cli, json, refusal } from '../helpers/cli.js';
import { freshDatabase, TEST_DATABASE_URL, TEST_REDIS_URL, type TestDatabase } from '../helpers/db.js';
import { makeClient, type Client } from '../helpers/factories.js';
import { authorize, refresh, tokenRequest } from '../helpers/oauth.js';

/** The keys are stored encrypted, as in production: instances open a rotated key with the secret when they first see it. */
const KEYS_SECRET = 'a-keys-secret-of-at-least-32-characters!';

/** Long enough for an instance without Redis to notice a new key (it reads the keys every 2 s) well before it signs. */
const ACTIVATION_DELAY_S = 6;

/**
 * Two-phase signing-key rotation on a running deployment of two instances sharing one database,
 * driven by the real CLI: the new key is published by every instance, without a restart, before
 * any of them signs with it, and signs after the activation delay; a retired key leaves every
 * instance's JWKS. With Redis the CLI's change is seen at the very next JWKS request; without
 * it, within an instance's poll of the keys table.
 */
const setups: Array<{ title: string; kind: 'sqlite' | 'postgres'; redis: boolean }> = [
  { title: 'SQLite, no Redis', kind: 'sqlite', redis: false },
  ...(TEST_DATABASE_URL ? [{ title: 'PostgreSQL, no Redis', kind: 'postgres' as const, redis: false }] : []),
  ...(TEST_DATABASE_URL && TEST_REDIS_URL ? [{ title: 'PostgreSQL + Redis', kind: 'postgres' as const, redis: true }] : []),
];

/** One instance's chain of ID tokens: refreshed to get the next one, signed with whatever key signs now. */
interface Instance {
  server: RunningIdp;
  browser: Browser;
  client: Client;
  refreshToken: string;
  /** The first ID token it issued, before any rotation. */
  firstIdToken: string;
}

async function jwksOf(server: RunningIdp): Promise<JSONWebKeySet> {
  const res = await fetch(`${server.url}/login/oauth/jwks`);
  expect(res.status).to.equal(200);
  return (await res.json()) as JSONWebKeySet;
}

const kidsOf = (jwks: JSONWebKeySet) => jwks.keys.map((key) => String(key.kid));
const kidOf = (jwt: string) => String(decodeProtectedHeader(jwt).kid);

/** A new ID token from `instance` (a refresh grant), and when it was asked for. */
async function nextIdToken(instance: Instance): Promise<{ idToken: string; asked: number }> {
  const asked = Date.now();
  const res = await refresh(instance.server.url, instance.client, instance.refreshToken);
  expect(res.status, res.text).to.equal(200);
  instance.refreshToken = String(res.body.refresh_token);
  return { idToken: String(res.body.id_token), asked };
}

/** Whether the provider itself still verifies `idToken`: its logout page takes it as id_token_hint (400 when it does not verify). */
async function logoutAccepts(instance: Instance, idToken: string): Promise<boolean> {
  const page = await instance.browser.get(`/login/oauth/logout?${new URLSearchParams({ id_token_hint: idToken })}`);
  expect([200, 400], page.text.slice(0, 300)).to.include(page.status);
  return page.status === 200;
}

for (const setup of setups) {
  describe(`signing-key rotation on two running instances (${setup.title})`, function () {
    this.timeout(120_000);
    let database: TestDatabase;
    const instances: Instance[] = [];
    let oldKid: string;
    let newKid: string;
    /** What the CLI needs to reach the instances' storage. */
    const cliEnv = () => ({ REDIS_URL: setup.redis ? TEST_REDIS_URL! : '', KEYS_SECRET });
    const keys = (...args: string[]) => cli(database.url, ['keys', ...args], '', { ...cliEnv(), KEY_ACTIVATION_DELAY_S: String(ACTIVATION_DELAY_S) });

    before(async () => {
      database = await freshDatabase(setup.kind);
      const profile: Profile = setup.redis ? 'postgres+redis' : 'sqlite';
      // The CLI replaces versions under the service's default Redis key prefix: the instances use it too.
      const prefix = setup.redis ? 'idp:' : undefined;
      for (let i = 0; i < 2; i += 1) {
        const server = await startIdp(profile, { KEYS_SECRET }, database, prefix);
        const client = await makeClient(database.db);
        const browser = new Browser(server.url);
        const code = (await authorize(browser, { ...client, scope: 'openid groups:read-only' }, client.user)).searchParams.get('code')!;
        const res = await tokenRequest(server.url, { form: { client_id: client.clientId, client_secret: client.clientSecret, code, redirect_uri: client.redirectUri } });
        expect(res.status, res.text).to.equal(200);
        instances.push({ server, browser, client, refreshToken: String(res.body.refresh_token), firstIdToken: String(res.body.id_token) });
      }
    });

    after(async () => {
      for (const instance of instances.splice(0)) await instance.server.stop();
      await database?.drop();
    });

    it('publishes a rotated key on every instance before either signs with it, and signs with it after the activation delay', async () => {
      const before = await Promise.all(instances.map((i) => jwksOf(i.server)));
      expect(kidsOf(before[0]!)).to.have.length(1);
      expect(kidsOf(before[1]!)).to.deep.equal(kidsOf(before[0]!));
      oldKid = kidsOf(before[0]!)[0]!;
      for (const instance of instances) expect(kidOf(instance.firstIdToken)).to.equal(oldKid);

      const rotated = json(await keys('rotate', '--json'));
      newKid = String(rotated.kid);
      const activeFrom = Date.parse(String(rotated.activeFrom));

      if (setup.redis) {
        // The CLI replaced the keys' version in Redis: the very next JWKS request on each instance lists the key.
        for (const instance of instances) expect(kidsOf(await jwksOf(instance.server))).to.include(newKid);
      }
      // Each instance's JWKS as last seen, and ID tokens asked for until both sign with the new key.
      const published = instances.map(() => false);
      let oldTokensWhilePublished = 0;
      const signsNew = instances.map(() => false);
      await waitFor(
        async () => {
          for (const [n, instance] of instances.entries()) {
            published[n] = kidsOf(await jwksOf(instance.server)).includes(newKid) || published[n]!;
          }
          for (const [n, instance] of instances.entries()) {
            const { idToken, asked } = await nextIdToken(instance);
            if (kidOf(idToken) === newKid) {
              expect(published, `instance ${n} signed with the new key before every instance published it`).to.deep.equal([true, true]);
              expect(asked, 'signed with the new key before its activation time').to.be.at.least(activeFrom - 1000);
              signsNew[n] = true;
            } else {
              expect(kidOf(idToken)).to.equal(oldKid);
              expect(signsNew[n], `instance ${n} went back to the old key`).to.equal(false);
              if (published.every(Boolean)) oldTokensWhilePublished += 1;
            }
          }
          return signsNew.every(Boolean);
        },
        () => `published ${JSON.stringify(published)}, signing with the new key ${JSON.stringify(signsNew)}`,
        ACTIVATION_DELAY_S * 1000 + 15_000,
      );
      // The new key was published and verifying while the old one still signed: the two phases were seen.
      expect(oldTokensWhilePublished).to.be.greaterThan(0);
      for (const row of await database.db('keys').select('material')) expect(row.material).to.match(/^enc:v1:/);
      expect(activeFrom - Date.parse(String(rotated.createdAt)), 'activation delay (ms)').to.equal(ACTIVATION_DELAY_S * 1000);
    });

    it('still verifies ID tokens the old key signed, on every instance and through its JWKS', async () => {
      for (const instance of instances) {
        const jwks = await jwksOf(instance.server);
        expect(kidsOf(jwks)).to.deep.equal([newKid, oldKid]);
        const { payload } = await jwtVerify(instance.firstIdToken, createLocalJWKSet(jwks), { issuer: instance.server.url, audience: instance.client.clientId });
        expect(payload.sub).to.equal(String(instance.client.user.id));
        expect(await logoutAccepts(instance, instance.firstIdToken)).to.equal(true);
      }
    });

    it('lists the new key as signing and the old one as verifying only', async () => {
      const { keys: listed } = json(await keys('list', '--json')) as { keys: Array<Record<string, unknown>> };
      expect(listed.map((key) => [key.kid, key.state])).to.deep.equal([
        [newKid, 'signing'],
        [oldKid, 'previous'],
      ]);
      const text = await keys('list');
      expect(text.stdout).to.include(`${newKid}  created `).and.include('signs now');
    });

    it('refuses to retire the key that signs now, and the old one while its ID tokens may still be valid (exit 2)', async () => {
      expect(refusal(await keys('retire', newKid))).to.match(new RegExp(`^idp: signing key ${newKid} signs tokens now: rotate first`));
      expect(refusal(await keys('retire', oldKid))).to.match(new RegExp(`^idp: signing key ${oldKid} signed tokens until .* that may still be valid: retire it from .*, or now with --force`));
      expect(refusal(await keys('retire', 'no-such-kid'))).to.equal('idp: no signing key "no-such-kid" (idp keys list shows them)');
      for (const instance of instances) expect(kidsOf(await jwksOf(instance.server))).to.deep.equal([newKid, oldKid]);
    });

    it('retires the old key with --force: every instance stops publishing and verifying it, and signs on with the new one', async () => {
      expect(json(await keys('retire', oldKid, '--force', '--json'))).to.deep.equal({ kid: oldKid, state: 'previous', retired: true });
      const gone = async () => (await Promise.all(instances.map(async (i) => kidsOf(await jwksOf(i.server))))).every((kids) => kids.join() === newKid);
      if (setup.redis) expect(await gone(), 'the JWKS of both instances right after the CLI').to.equal(true);
      else await waitFor(gone, () => 'an instance still publishes the retired key', 10_000);
      for (const instance of instances) {
        await waitFor(async () => !(await logoutAccepts(instance, instance.firstIdToken)), () => 'the provider still verifies a token of the retired key', 10_000);
        expect(kidOf((await nextIdToken(instance)).idToken)).to.equal(newKid);
      }
    });
  });
}
