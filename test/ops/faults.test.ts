import { expect } from 'chai';
import { profiles, startIdp, waitFor, type RunningIdp } from '../helpers/app.js';
import { Browser, signIn } from '../helpers/browser.js';
import { freshDatabase, TEST_REDIS_URL, type TestDatabase } from '../helpers/db.js';
import { CALLBACK, makeClient, makeGroup, makeUser, personalToken, type Client, type TestUser } from '../helpers/factories.js';
import { authorizeUrl, basicAuth, oauthTokens, tokenRequest } from '../helpers/oauth.js';
import { call } from '../helpers/api.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { changed } from '../../src/services/change-versions.js';

/** What the service promises while a store is away: a 503 with Retry-After within this long. */
const ANSWER_WITHIN_MS = 5000;
/** And /readyz, within its own shorter limit. */
const READY_WITHIN_MS = 2500;

type Store = 'database' | 'redis';
type Answer = { status: number; retryAfter: string | null; error: string | undefined; text: string; ms: number };

async function timed(request: () => Promise<{ status: number; headers: Headers; text: string; body?: { error?: string } }>): Promise<Answer> {
  const started = performance.now();
  const res = await request();
  return { status: res.status, retryAfter: res.headers.get('retry-after'), error: res.body?.error, text: res.text, ms: performance.now() - started };
}

/**
 * The service between TCP proxies and its stores (PostgreSQL and Redis), each store made to
 * refuse, cut and stall in turn. Only the PostgreSQL + Redis profile has servers to put a proxy
 * in front of; SQLite-only runs skip the suite.
 */
(profiles().includes('postgres+redis') ? describe : describe.skip)('storage faults (postgres+redis)', function () {
  this.timeout(40_000);
  let database: TestDatabase;
  let proxies: Record<Store, TcpProxy>;
  let idp: RunningIdp;
  let owner: TestUser;
  let groupId: number;
  let apiToken: string;
  let client: Client;
  let browser: Browser;
  let accessToken: string;

  before(async () => {
    database = await freshDatabase('postgres+redis');
    proxies = { database: await TcpProxy.start(database.url), redis: await TcpProxy.start(TEST_REDIS_URL!) };
    // The default timeouts: what an operator gets is what must answer within the promise.
    idp = await startIdp('postgres+redis', { DATABASE_URL: proxies.database.urlFor(database.url), REDIS_URL: proxies.redis.urlFor(TEST_REDIS_URL!) }, database);
    // Fixtures go straight to the database, not through the proxy.
    owner = await makeUser(database.db);
    groupId = (await makeGroup(database.db, owner.id)).id;
    apiToken = await personalToken(database.db, owner.id, { scopes: ['groups:read-write'] });
    client = await makeClient(database.db);
    browser = await signIn(idp.url, owner);
    ({ accessToken } = await oauthTokens(idp.url, client, client.user, 'openid'));
  });

  after(async () => {
    await proxies?.database.forward();
    await proxies?.redis.forward();
    await idp?.stop();
    await proxies?.database.close();
    await proxies?.redis.close();
    await database?.drop();
  });

  afterEach(async () => {
    // A failed test must not leave the next one without its stores.
    await proxies.database.forward();
    await proxies.redis.forward();
  });

  /**
   * Every surface, asked at once: a page, an API route, and the OAuth endpoints (token,
   * authorize, userinfo, introspection). `usual` is what each answers while both stores are up.
   */
  const SURFACES = {
    page: { ask: () => browser.get('/groups'), usual: 200 },
    api: { ask: () => call(idp, '/apis/v2/user', { token: apiToken }), usual: 200 },
    token: {
      ask: () => tokenRequest(idp.url, { query: { client_id: client.clientId, client_secret: client.clientSecret, code: 'not-a-code-anyone-was-given', redirect_uri: CALLBACK } }),
      usual: 400,
    },
    // A browser without a session: the provider reads the client and stores the interaction, then sends it to sign in.
    authorize: { ask: () => new Browser(idp.url).get(authorizeUrl(idp.url, { clientId: client.clientId, redirectUri: CALLBACK, scope: 'openid' })), usual: 302 },
    userinfo: { ask: () => call(idp, '/login/oauth/userinfo', { token: accessToken }), usual: 200 },
    introspection: {
      ask: () => call(idp, '/login/oauth/introspect', { method: 'POST', authorization: basicAuth(client.clientId, client.clientSecret), form: { token: accessToken } }),
      usual: 200,
    },
  } as const;
  type Surface = keyof typeof SURFACES;

  /**
   * The client and account the surfaces use are read from PostgreSQL again on their next use, as
   * on an instance that has not cached them (with Redis, a client and an account read in the last
   * minute need only Redis: see the test of that below).
   */
  const forgetCached = () => changed(idp.db, [`app:${client.clientId}`, `user:${client.user.id}`]);

  async function askEverySurface(): Promise<Record<Surface, Answer>> {
    const names = Object.keys(SURFACES) as Surface[];
    const answers = await Promise.all(names.map((name) => timed(SURFACES[name].ask)));
    return Object.fromEntries(names.map((name, i) => [name, answers[i]!])) as Record<Surface, Answer>;
  }

  function expectUnavailable(answers: Record<Surface, Answer>): void {
    for (const [name, answer] of Object.entries(answers)) {
      expect(answer.status, `${name}: ${answer.text.slice(0, 300)}`).to.equal(503);
      expect(answer.retryAfter, name).to.equal('5');
      expect(answer.ms, `${name} answered after ${Math.round(answer.ms)} ms`).to.be.below(ANSWER_WITHIN_MS);
    }
  }

  async function expectAway(store: Store): Promise<void> {
    const answers = await askEverySurface();
    expectUnavailable(answers);
    // The site's styled error page, not a bare text.
    expect(answers.page.text).to.include('Temporarily unavailable').and.include('/static/site.css');
    for (const name of ['api', 'token', 'userinfo', 'introspection'] as const) expect(answers[name].error, name).to.equal('temporarily_unavailable');

    const started = performance.now();
    const ready = await fetch(`${idp.url}/readyz`);
    expect(performance.now() - started, '/readyz answer time').to.be.below(READY_WITHIN_MS);
    expect(ready.status).to.equal(503);
    const other: Store = store === 'database' ? 'redis' : 'database';
    expect(await ready.json()).to.deep.equal({ status: 'unavailable', checks: { [store]: 'unreachable', [other]: 'ok' } });
  }

  /** Service resumes by itself: every surface answers as usual again, without a restart. */
  async function expectBack(): Promise<void> {
    let last: Partial<Record<Surface, Answer>> = {};
    await waitFor(
      async () => {
        last = await askEverySurface();
        return Object.entries(SURFACES).every(([name, { usual }]) => last[name as Surface]!.status === usual);
      },
      () => `still not back: ${Object.entries(last).map(([name, a]) => `${name} ${a.status} ${a.text.slice(0, 120)}`).join(' | ')}`,
      15_000,
    );
    expect(last.token!.error).to.equal('invalid_grant');
    const ready = await fetch(`${idp.url}/readyz`);
    expect(await ready.json()).to.deep.equal({ status: 'ok', checks: { database: 'ok', redis: 'ok' } });
  }

  it('answers as usual before any fault', async () => {
    await expectBack();
  });

  for (const store of ['database', 'redis'] as const) {
    describe(`${store === 'database' ? 'PostgreSQL' : 'Redis'} away`, () => {
      it('refused (nothing listens, open connections reset): 503 with Retry-After everywhere, then back', async () => {
        await forgetCached();
        await proxies[store].refuse();
        proxies[store].cut();
        await expectAway(store);
        await proxies[store].forward();
        await expectBack();
      });

      it('cut mid-stream (requests in flight reset, new connections reset): 503 with Retry-After everywhere, then back', async () => {
        await forgetCached();
        proxies[store].stall();
        const inFlight = askEverySurface();
        await new Promise((resolve) => setTimeout(resolve, 300));
        proxies[store].cut();
        expectUnavailable(await inFlight);
        await expectAway(store);
        await proxies[store].forward();
        await expectBack();
      });

      it('stalled (connections accepted, nothing answered): 503 with Retry-After within 5 s, no hang, then back once it answers', async () => {
        await forgetCached();
        proxies[store].stall();
        await expectAway(store);
        // A second round while still stalled: the requests of the first must not have left
        // anything queued that makes these slower.
        await expectAway(store);
        await proxies[store].forward();
        await expectBack();
      });
    });
  }

  function createApplication(name: string) {
    return timed(() =>
      call(idp, `/apis/v2/groups/${groupId}/oauth-apps`, {
        token: apiToken,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name, homepageURL: 'https://half.example.test', description: 'made while PostgreSQL fails', callbackURL: CALLBACK }),
      }),
    );
  }

  it('PostgreSQL away: the token endpoint still answers for a client and account it read in the last minute (their cache needs only Redis)', async () => {
    const code = 'not-a-code-anyone-was-given';
    const ask = () => tokenRequest(idp.url, { query: { client_id: client.clientId, client_secret: client.clientSecret, code, redirect_uri: CALLBACK } });
    expect((await ask()).body.error).to.equal('invalid_grant');
    await proxies.database.refuse();
    proxies.database.cut();
    const res = await ask();
    expect(res.status, res.text).to.equal(400);
    expect(res.body.error).to.equal('invalid_grant');
  });

  // Caches of other instances learn of a change through the application's version in Redis,
  // replaced before the SQL change: when that write cannot be made, nothing changes.
  it("Redis stalled as a secret's revocation replaces the application's version: 503 within 5 s, and the secret still works", async () => {
    const app = await makeClient(database.db);
    const manage = await personalToken(database.db, app.user.id, { scopes: ['groups:read-write'] });
    const listed = await call(idp, `/apis/v2/oauth-apps/${app.clientId}`, { token: manage });
    const [secret] = listed.body.data.secrets as Array<{ id: number }>;
    proxies.redis.faultWhenSent(`ver:app:${app.clientId}`, 'stall');
    const res = await timed(() => call(idp, `/apis/v2/oauth-apps/${app.clientId}/secrets/${secret!.id}`, { method: 'DELETE', token: manage }));
    expect(res.status, res.text).to.equal(503);
    expect(res.ms, `answered after ${Math.round(res.ms)} ms`).to.be.below(ANSWER_WITHIN_MS);
    await proxies.redis.forward();
    expect(await database.db('oauth_app_secrets').where({ id: secret!.id }).first()).to.not.equal(undefined);
    // It still authenticates its application (introspection answers only an authenticated client).
    const introspected = await call(idp, '/login/oauth/introspect', { method: 'POST', authorization: basicAuth(app.clientId, app.clientSecret), form: { token: accessToken } });
    expect(introspected.status, introspected.text).to.equal(200);
  });

  // The application's row is written inside the transaction; the fault strikes when the secret's
  // insert is sent, before PostgreSQL sees it.
  for (const fault of ['cut', 'stall'] as const) {
    it(`a connection ${fault === 'cut' ? 'cut' : 'stalled'} in the middle of creating an application: 503 within 5 s, and no application without its secret`, async () => {
      const name = `Half written ${fault} ${Date.now()}`;
      proxies.database.faultWhenSent('insert into "oauth_app_secrets"', fault);
      const res = await createApplication(name);
      expect(res.status, res.text).to.equal(503);
      expect(res.retryAfter).to.equal('5');
      // Stalled: the unanswered insert drops its connection, so the transaction's ROLLBACK does
      // not wait behind it for a second timeout.
      expect(res.ms, `answered after ${Math.round(res.ms)} ms`).to.be.below(ANSWER_WITHIN_MS);
      await proxies.database.forward();
      expect(await database.db('oauth_apps').where({ name }).first()).to.equal(undefined);
      // And the same request succeeds once the database answers.
      const again = await createApplication(name);
      expect(again.status, again.text).to.equal(201);
      const app = await database.db('oauth_apps').where({ name }).first();
      expect(await database.db('oauth_app_secrets').where({ app_id: app.id }).count({ n: '*' }).first()).to.deep.equal({ n: '1' });
    });
  }
});
