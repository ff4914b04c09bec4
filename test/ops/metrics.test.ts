import { expect } from 'chai';
import { ConfigError, loadConfig } from '../../src/config.js';
import { PrometheusMetrics, serveMetrics } from '../../src/metrics.js';
import { outageStore } from '../../src/storage.js';
import { call } from '../helpers/api.js';
import { describeEachProfile, listen, startIdp, useIdp } from '../helpers/app.js';
import { Browser, signIn } from '../helpers/browser.js';
import { makeClient, makeUser, personalToken, type Client } from '../helpers/factories.js';
import { csrfFrom, findOnceKey, formAction } from '../helpers/html.js';
import { oauthTokens, tokenRequest } from '../helpers/oauth.js';
import { atMidStep, codeFor, withTwoFactor } from '../helpers/totp.js';

/**
 * GET /metrics on the metrics listener (METRICS_PORT), scraped over real HTTP after real sign-ins,
 * token exchanges and API calls: the counters move, with the labels an operator reads, and
 * nothing in the scrape names a token, a user or a client.
 */

/** One scrape, read as `name{labels}` → value (labels as Prometheus writes them, sorted here). */
type Scrape = { text: string; value(name: string, labels?: Record<string, string>): number };

async function scrape(url: string | undefined): Promise<Scrape> {
  expect(url, 'the metrics listener').to.be.a('string');
  const res = await fetch(url!);
  expect(res.status).to.equal(200);
  const text = await res.text();
  const series = new Map<string, number>();
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (match) series.set(`${match[1]}{${sortedLabels(match[2] ?? '')}}`, Number(match[3]));
  }
  return {
    text,
    value(name, labels = {}) {
      const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`).sort().join(',');
      return series.get(`${name}{${wanted}}`) ?? 0;
    },
  };
}

function sortedLabels(labels: string): string {
  return (labels.match(/[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*"/g) ?? []).sort().join(',');
}

/** How much each series moved between two scrapes. */
function moved(before: Scrape, after: Scrape, name: string, labels: Record<string, string> = {}): number {
  return after.value(name, labels) - before.value(name, labels);
}

describeEachProfile('operations: metrics', (profile) => {
  // Low client and API limits, so their refusals are reached in a few requests.
  const idp = useIdp(profile, { METRICS_PORT: '0', RATE_LIMIT_CLIENT_AUTH: '2/1m', RATE_LIMIT_API_TOKEN: '3/1h' });
  let client: Client;

  before(async () => {
    client = await makeClient(idp.db);
  });

  it('answers on its own loopback listener, while /metrics on the public port is the 404 page', async () => {
    expect(idp.metricsUrl).to.match(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    expect(new URL(idp.metricsUrl!).port).to.not.equal(new URL(idp.url).port);
    const res = await fetch(idp.metricsUrl!);
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    for (const name of ['idp_http_requests_total', 'idp_http_request_duration_seconds', 'idp_tokens_issued_total', 'idp_sign_ins_total', 'idp_rate_limit_refusals_total', 'idp_storage_errors_total', 'idp_kdf_running', 'idp_kdf_waiting', 'process_cpu_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_seconds']) {
      expect(text, name).to.include(`# TYPE ${name} `);
    }
    const publicPort = await fetch(`${idp.url}/metrics`);
    expect(publicPort.status).to.equal(404);
    expect(await publicPort.text()).to.not.include('idp_http_requests_total');
    expect((await fetch(new URL('/other', idp.metricsUrl!))).status).to.equal(404);
    expect((await fetch(idp.metricsUrl!, { method: 'POST' })).status).to.equal(405);
  });

  it('counts a flow sign-in, the tokens it leads to, the exchange and an API call, by route pattern and status', async () => {
    const before = await scrape(idp.metricsUrl);
    const { accessToken, refreshToken } = await oauthTokens(idp.url, client, client.user);
    const api = await call(idp, '/apis/v2/user', { token: accessToken });
    expect(api.status).to.equal(200);
    const after = await scrape(idp.metricsUrl);

    expect(moved(before, after, 'idp_sign_ins_total', { outcome: 'success' })).to.equal(1);
    for (const kind of ['authorization_code', 'access_token', 'refresh_token']) {
      expect(moved(before, after, 'idp_tokens_issued_total', { kind }), kind).to.equal(1);
    }
    expect(moved(before, after, 'idp_http_requests_total', { route: 'oauth_token', method: 'POST', status: '200' })).to.equal(1);
    expect(moved(before, after, 'idp_http_requests_total', { route: 'oauth_authorization', method: 'GET', status: '302' })).to.be.at.least(1);
    expect(moved(before, after, 'idp_http_requests_total', { route: '/interaction/:uid/login', method: 'POST', status: '303' })).to.equal(1);
    expect(moved(before, after, 'idp_http_requests_total', { route: '/apis/v2/user', method: 'GET', status: '200' })).to.equal(1);
    expect(moved(before, after, 'idp_http_request_duration_seconds_count', { route: '/apis/v2/user', method: 'GET', status: '200' })).to.equal(1);
    expect(moved(before, after, 'idp_http_request_duration_seconds_bucket', { route: '/apis/v2/user', method: 'GET', status: '200', le: '+Inf' })).to.equal(1);
    expect(after.value('idp_http_request_duration_seconds_sum', { route: 'oauth_token', method: 'POST', status: '200' })).to.be.above(0);

    // Nothing secret, and nothing that names a person or an application.
    for (const secret of [accessToken, refreshToken, client.user.username, client.user.email, client.clientId, client.clientSecret]) {
      expect(after.text, 'the scrape').to.not.include(secret);
    }
    // Routes are patterns or families, never paths with their ids.
    const routes = [...after.text.matchAll(/route="([^"]*)"/g)].map((m) => m[1]!);
    expect(routes.filter((route) => !/^(oauth_[a-z_]+|api|oauth|page|\/[a-zA-Z0-9/_:.-]*)$/.test(route)), routes.join(' ')).to.deep.equal([]);
    expect(routes.some((route) => /\/interaction\/[A-Za-z0-9_-]{10,}/.test(route)), routes.join(' ')).to.equal(false);
  });

  it('counts a refused API token and a request no route takes by its family, not its path', async () => {
    const before = await scrape(idp.metricsUrl);
    expect((await call(idp, '/apis/v2/user', { token: 'ho_not-a-real-token' })).status).to.equal(401);
    expect((await call(idp, '/apis/v2/no-such-thing/raw-path-marker')).status).to.equal(404);
    expect((await fetch(`${idp.url}/no-such-page/raw-path-marker`)).status).to.equal(404);
    const after = await scrape(idp.metricsUrl);
    expect(moved(before, after, 'idp_http_requests_total', { route: '/apis/v2/user', method: 'GET', status: '401' })).to.equal(1);
    expect(moved(before, after, 'idp_http_requests_total', { route: 'api', method: 'GET', status: '404' })).to.equal(1);
    expect(moved(before, after, 'idp_http_requests_total', { route: 'page', method: 'GET', status: '404' })).to.equal(1);
    // A path's own words never become a label (a number could appear in any metric's value).
    expect(after.text).to.not.include('raw-path-marker');
    expect(after.text).to.not.include('ho_not-a-real-token');
  });

  it('counts wrong passwords, and the refusal past the limit by outcome and by the limit that refused', async () => {
    const user = await makeUser(idp.db);
    const visitor = new Browser(idp.url);
    await visitor.get('/login').expect(200);
    const before = await scrape(idp.metricsUrl);
    for (let i = 0; i < 5; i += 1) await visitor.submit('/login', { login: user.username, password: 'not the password' }).expect(401);
    await visitor.submit('/login', { login: user.username, password: 'not the password' }).expect(429);
    const after = await scrape(idp.metricsUrl);
    expect(moved(before, after, 'idp_sign_ins_total', { outcome: 'wrong_password' })).to.equal(5);
    expect(moved(before, after, 'idp_sign_ins_total', { outcome: 'rate_limited' })).to.equal(1);
    expect(moved(before, after, 'idp_rate_limit_refusals_total', { limit: 'signin-account-ip' })).to.equal(1);
    expect(moved(before, after, 'idp_http_requests_total', { route: '/login', method: 'POST', status: '429' })).to.equal(1);
    expect(after.text).to.not.include(user.username);
  });

  it('counts client authentications and API calls refused by their limits, by the limit\'s name', async () => {
    const other = await makeClient(idp.db);
    const token = await personalToken(idp.db, other.user.id);
    const before = await scrape(idp.metricsUrl);
    const wrongSecret = () => tokenRequest(idp.url, { query: { client_id: other.clientId, client_secret: 'not-the-secret', code: 'whatever', redirect_uri: other.redirectUri } });
    expect((await wrongSecret()).status).to.equal(401);
    expect((await wrongSecret()).status).to.equal(401);
    expect((await wrongSecret()).status).to.equal(429);
    for (let i = 0; i < 3; i += 1) expect((await call(idp, '/apis/v2/user', { token })).status).to.equal(200);
    expect((await call(idp, '/apis/v2/user', { token })).status).to.equal(429);
    const after = await scrape(idp.metricsUrl);
    expect(moved(before, after, 'idp_rate_limit_refusals_total', { limit: 'client-auth' })).to.equal(1);
    expect(moved(before, after, 'idp_rate_limit_refusals_total', { limit: 'api-token' })).to.equal(1);
    expect(moved(before, after, 'idp_http_requests_total', { route: '/apis/v2/user', method: 'GET', status: '429' })).to.equal(1);
    expect(after.text).to.not.include(token);
    expect(after.text).to.not.include(other.clientId);
  });

  it('counts the second step of a two-factor sign-in: needed, failed, then success', async () => {
    const user = await makeUser(idp.db);
    const { secret } = await withTwoFactor(idp.db, user);
    await atMidStep(async () => {
      const browser = new Browser(idp.url);
      await browser.get('/login').expect(200);
      const before = await scrape(idp.metricsUrl);
      await browser.submit('/login', { login: user.username, password: user.password }).expect(302, /^\/login\/two-factor/);
      await browser.get('/login/two-factor').expect(200);
      await browser.submit('/login/two-factor', { code: '000000' }).expect(400);
      await browser.submit('/login/two-factor', { code: await codeFor(secret) }).expect(302);
      const after = await scrape(idp.metricsUrl);
      expect(moved(before, after, 'idp_sign_ins_total', { outcome: 'second_factor_needed' })).to.equal(1);
      expect(moved(before, after, 'idp_sign_ins_total', { outcome: 'second_factor_failed' })).to.equal(1);
      expect(moved(before, after, 'idp_sign_ins_total', { outcome: 'success' })).to.equal(1);
    }, 1);
  });

  it('counts a personal access token made on the Access tokens page, and a repeated form makes and counts none', async () => {
    const user = await makeUser(idp.db);
    const browser = await signIn(idp.url, user);
    const html = (await browser.get('/account/settings/tokens').expect(200)).text;
    const body = new URLSearchParams({ _csrf: csrfFrom(html), _once: findOnceKey(html) ?? '', name: 'metrics', scopes: 'groups:read-only', expiration: '30' }).toString();
    const post = () => browser.request(formAction(html, '/account/settings/tokens'), { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body });
    const before = await scrape(idp.metricsUrl);
    await post().expect(302, /token-created/);
    await post().expect(302, /token-repeated/);
    const after = await scrape(idp.metricsUrl);
    expect(moved(before, after, 'idp_tokens_issued_total', { kind: 'personal_access_token' })).to.equal(1);
  });

  it('reports the hashing queue as gauges', async () => {
    const now = await scrape(idp.metricsUrl);
    expect(now.text).to.match(/^idp_kdf_running \d+$/m);
    expect(now.text).to.match(/^idp_kdf_waiting \d+$/m);
  });
});

describe('operations: metrics while the hashing queue is full', () => {
  // One hash at a time and no queue: sign-ins sent together are mostly refused as busy.
  const idp = useIdp('sqlite', { METRICS_PORT: '0', KDF_CONCURRENCY: '1', KDF_QUEUE: '0' });

  it('counts each sign-in refused as busy, and each one let through as a success', async () => {
    const people = await Promise.all(Array.from({ length: 8 }, () => makeUser(idp.db)));
    const visitors = await Promise.all(people.map(async (person) => {
      const browser = new Browser(idp.url);
      await browser.get('/login').expect(200);
      return { person, browser };
    }));
    const before = await scrape(idp.metricsUrl);
    const answers = await Promise.all(visitors.map(({ person, browser }) => browser.submit('/login', { login: person.username, password: person.password })));
    const statuses = answers.map((a) => a.status);
    expect(statuses.every((s) => s === 302 || s === 503), statuses.join(' ')).to.equal(true);
    expect(statuses.filter((s) => s === 503).length, statuses.join(' ')).to.be.at.least(1);
    const after = await scrape(idp.metricsUrl);
    expect(moved(before, after, 'idp_sign_ins_total', { outcome: 'busy' })).to.equal(statuses.filter((s) => s === 503).length);
    expect(moved(before, after, 'idp_sign_ins_total', { outcome: 'success' })).to.equal(statuses.filter((s) => s === 302).length);
  });
});

describe('operations: metrics while Redis is away', () => {
  const idp = useIdp('sqlite', { REDIS_URL: 'redis://127.0.0.1:1/0', METRICS_PORT: '0' });

  it('counts the storage error behind a 503 by store', async () => {
    const client = await makeClient(idp.db);
    const before = await scrape(idp.metricsUrl);
    const res = await tokenRequest(idp.url, { query: { client_id: client.clientId, client_secret: client.clientSecret, code: 'a-code-looked-up-in-redis', redirect_uri: client.redirectUri } });
    expect(res.status).to.equal(503);
    const after = await scrape(idp.metricsUrl);
    expect(moved(before, after, 'idp_storage_errors_total', { store: 'redis' })).to.be.at.least(1);
    expect(moved(before, after, 'idp_storage_errors_total', { store: 'database' })).to.equal(0);
    expect(moved(before, after, 'idp_http_requests_total', { route: 'oauth_token', method: 'POST', status: '503' })).to.equal(1);
  });
});

describe('operations: metrics settings', () => {
  it('has no metrics listener unless METRICS_PORT is set', async () => {
    const idp = await startIdp('sqlite');
    try {
      expect(idp.metricsUrl).to.equal(undefined);
      expect((await fetch(`${idp.url}/metrics`)).status).to.equal(404);
    } finally {
      await idp.stop();
    }
  });

  it('tells a Redis outage from a database one by the error ioredis or the SQL drivers give', () => {
    const named = (name: string, message = '') => Object.assign(new Error(message), { name });
    const coded = (code: string, message = '') => Object.assign(new Error(message), { code });
    expect(outageStore(named('MaxRetriesPerRequestError', 'Reached the max retries per request limit (which is 2).'))).to.equal('redis');
    expect(outageStore(new Error('Connection is closed.'))).to.equal('redis');
    expect(outageStore(new Error('Command timed out'))).to.equal('redis');
    expect(outageStore(new AggregateError([new Error('Connection is closed.')]))).to.equal('redis');
    expect(outageStore(coded('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432'))).to.equal('database');
    expect(outageStore(named('KnexTimeoutError', 'Knex: Timeout acquiring a connection.'))).to.equal('database');
    expect(outageStore(new Error('Connection terminated unexpectedly'))).to.equal('database');
    expect(outageStore(coded('SQLITE_BUSY'))).to.equal('database');
  });

  it('says which setting to change when the metrics port is taken', async () => {
    const taken = await listen();
    try {
      const port = Number(new URL(taken.url).port);
      const refusal = await serveMetrics(new PrometheusMetrics(), '127.0.0.1', port).then(() => 'listened', (err: Error) => err.message);
      expect(refusal).to.equal(`cannot listen for metrics on METRICS_HOST=127.0.0.1 METRICS_PORT=${port}: EADDRINUSE`);
    } finally {
      await taken.close();
    }
  });

  it('listens on loopback by default, and refuses a METRICS_PORT that is the public PORT or not a port', () => {
    expect(loadConfig({ METRICS_PORT: '9464' }).metrics).to.deep.equal({ host: '127.0.0.1', port: 9464 });
    expect(loadConfig({ METRICS_PORT: '9464', METRICS_HOST: '0.0.0.0' }).metrics).to.deep.equal({ host: '0.0.0.0', port: 9464 });
    expect(loadConfig({}).metrics).to.equal(undefined);
    const refused = (env: Record<string, string>) => {
      try {
        loadConfig(env);
      } catch (err) {
        expect(err).to.be.instanceOf(ConfigError);
        return (err as Error).message;
      }
      throw new Error('accepted');
    };
    expect(refused({ PORT: '3000', METRICS_PORT: '3000' })).to.match(/^METRICS_PORT="3000" is invalid: must differ from PORT/);
    expect(refused({ METRICS_PORT: '70000' })).to.equal('METRICS_PORT="70000" is invalid: must be a port number from 0 to 65535');
    expect(refused({ METRICS_PORT: 'nine' })).to.match(/^METRICS_PORT="nine" is invalid/);
  });
});
