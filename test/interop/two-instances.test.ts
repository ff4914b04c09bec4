import { spawn, type ChildProcess } from 'node:child_process';
import { expect } from 'chai';
import { Redis } from 'ioredis';
import { listAccessTokens } from '../../src/db/access-tokens.js';
import { setSiteAdmin } from '../../src/services/admin.js';
import { call, expectInvalidToken, type ApiResponse } from '../helpers/api.js';
import { freePort, waitFor } from '../helpers/app.js';
import { Browser, signIn } from '../helpers/browser.js';
import { freshDatabase, TEST_DATABASE_URL, TEST_REDIS_URL, type TestDatabase } from '../helpers/db.js';
import { makeClient, makeUser, personalToken, type Client } from '../helpers/factories.js';
import { errorMessage } from '../helpers/html.js';
import { authorize, authorizeUrl, basicAuth, discovery, oauthTokens } from '../helpers/oauth.js';
import { nodeArgsFor } from '../helpers/processes.js';
import { scanKeys } from '../helpers/redis-topologies.js';

/**
 * A request to one instance as a load balancer forwards it: to that instance's address, naming
 * the public host (the issuer's) in `Host`, which is the only host an instance answers for.
 * Redirects are not followed; a JSON answer's body is parsed.
 */
async function viaBalancer(instance: string, issuer: string, path: string, options: { method?: string; headers?: Record<string, string>; form?: Record<string, string> } = {}): Promise<ApiResponse> {
  const form: Record<string, string> = options.form ? { 'content-type': 'application/x-www-form-urlencoded' } : {};
  const body = options.form ? new URLSearchParams(options.form).toString() : undefined;
  const { status, headers, text } = await new Browser(instance).request(path, { method: options.method, headers: { ...form, ...options.headers, host: new URL(issuer).host }, body });
  return { status, headers, text, body: /json/.test(headers.get('content-type') ?? '') && text ? JSON.parse(text) : undefined };
}

/** The command line as the actor, as `idp user set-admin` makes a site administrator. */
const CLI = { userId: 0, ip: null, admin: true };

/**
 * Two real server processes (`npm start`'s entry point) on one PostgreSQL and one Redis, behind
 * one public issuer as a load balancer would put them: a code issued by one is redeemed at the
 * other, and a token from one is accepted by the other.
 */
describe('two instances sharing PostgreSQL and Redis', function () {
  this.timeout(60_000);
  let database: TestDatabase;
  const children: ChildProcess[] = [];
  const urls: string[] = [];
  const outputs: string[] = [];
  let issuer = '';

  before(async function () {
    if (!TEST_DATABASE_URL || !TEST_REDIS_URL) this.skip();
    database = await freshDatabase('postgres');
    const ports = [await freePort(), await freePort()];
    // Both instances share one issuer (the first address) as a deployment behind a balancer would.
    issuer = `http://127.0.0.1:${ports[0]}`;
    for (const port of ports) {
      const index = outputs.push('') - 1;
      const child = spawn(process.execPath, nodeArgsFor('src/index.ts'), {
        env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', ISSUER: issuer, DATABASE_URL: database.url, DATABASE_POOLING: database.pooling, REDIS_URL: TEST_REDIS_URL, LOG_LEVEL: 'warn', NODE_ENV: 'test' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child.stdout!.on('data', (d) => (outputs[index] += d));
      child.stderr!.on('data', (d) => (outputs[index] += d));
      children.push(child);
      urls.push(`http://127.0.0.1:${port}`);
    }
    await Promise.all(
      urls.map((url, i) =>
        waitFor(
          () => {
            if (children[i]!.exitCode !== null) throw new Error(`instance exited early: ${outputs[i]}`);
            return fetch(`${url}/readyz`).then((r) => r.ok, () => false);
          },
          () => `instance at ${url} not ready: ${outputs[i]}`,
          30_000,
        ),
      ),
    );
  });

  after(async () => {
    for (const child of children) child.kill('SIGTERM');
    await Promise.all(children.map((c) => (c.exitCode !== null ? undefined : new Promise((resolve) => c.once('exit', resolve)))));
    await database?.drop();
    // The instances ran as `npm start` runs, under the default key prefix: their state goes with them.
    if (TEST_REDIS_URL) {
      const redis = new Redis(TEST_REDIS_URL);
      for (const key of await scanKeys(redis, 'idp:*')) await redis.del(key);
      await redis.quit();
    }
  });

  it('redeems at the second instance a code issued by the first, and each accepts the other\'s token', async () => {
    const app = await makeClient(database.db);
    const callback = await authorize(new Browser(urls[0]!), app, app.user);
    const query = new URLSearchParams({ client_id: app.clientId, client_secret: app.clientSecret, code: callback.searchParams.get('code')!, redirect_uri: app.redirectUri });
    const { status, body } = await viaBalancer(urls[1]!, issuer, `/login/oauth/access_token?${query}`, { method: 'POST' });
    expect(status, JSON.stringify(body)).to.equal(200);
    for (const url of urls) {
      const res = await viaBalancer(url, issuer, '/apis/v2/groups', { headers: { authorization: `Bearer ${String(body.access_token)}` } });
      expect(res.status).to.equal(200);
    }
  });

  /**
   * A revocation made on one instance holds on the other at its very next request: no instance
   * may answer from what it saw before (a cache of clients, tokens or accounts). Each test first
   * uses the credential at the second instance a few times, so whatever it could keep it has,
   * then revokes it at the first the way a person or an application would, and asks the second
   * once, with no wait and no retry.
   */
  describe('revocations at one instance hold at the other at once', () => {
    /** The first instance answers at the issuer's address itself; the second through the balancer. */
    const atA = () => urls[0]!;
    const atB = (path: string, options: Parameters<typeof viaBalancer>[3] = {}) => viaBalancer(urls[1]!, issuer, path, options);
    const apiAtB = (token: string) => atB('/apis/v2/user', { headers: { authorization: `Bearer ${token}` } });
    const tokenAtB = (clientId: string, secret: string, params: Record<string, string>) =>
      atB('/login/oauth/access_token', { method: 'POST', headers: { authorization: basicAuth(clientId, secret) }, form: params });
    const exchangeAtB = (client: Client, secret: string, code: string) => tokenAtB(client.clientId, secret, { grant_type: 'authorization_code', code, redirect_uri: client.redirectUri });
    const refreshAtB = (client: Client, secret: string, refreshToken: string) => tokenAtB(client.clientId, secret, { grant_type: 'refresh_token', refresh_token: refreshToken });

    /** A fresh code of `client` for its owner, through the first instance (`browser` stays signed in there). */
    const codeAtA = async (browser: Browser, client: Client) => (await authorize(browser, { ...client, scope: 'groups:read-only' }, client.user)).searchParams.get('code')!;
    /** The owner's personal token that manages the group's applications over /apis/v2. */
    const ownerToken = (client: Client) => personalToken(database.db, client.user.id, { scopes: ['groups:read-write'] });

    /** Uses an access token at the second instance until it has surely been seen there. */
    async function warmApi(...tokens: string[]) {
      for (const token of tokens) {
        for (let i = 0; i < 3; i += 1) expect((await apiAtB(token)).status).to.equal(200);
      }
    }

    /**
     * A new application's owner signed in at the first instance, with tokens the second has used:
     * the first access token, and the pair the second issued by refreshing it.
     */
    async function tokensUsedAtB() {
      const client = await makeClient(database.db);
      const tokens = await oauthTokens(atA(), client, client.user);
      await warmApi(tokens.accessToken);
      const refreshed = await refreshAtB(client, client.clientSecret, tokens.refreshToken);
      expect(refreshed.status, refreshed.text).to.equal(200);
      const second = { accessToken: String(refreshed.body.access_token), refreshToken: String(refreshed.body.refresh_token) };
      await warmApi(second.accessToken);
      return { client, tokens, second };
    }

    function expectTokenError(res: ApiResponse, status: number, error: string) {
      expect(res.status, res.text).to.equal(status);
      expect(res.body.error, res.text).to.equal(error);
      expect(res.body).not.to.have.property('access_token');
    }

    it('refuses a client secret its owner revoked at the other instance, and takes the remaining one', async () => {
      const client = await makeClient(database.db);
      const manage = await ownerToken(client);
      const created = await call({ url: atA() }, `/apis/v2/oauth-apps/${client.clientId}/secrets`, { method: 'POST', token: manage, headers: { 'content-type': 'application/json' }, body: '{}' });
      expect(created.status, created.text).to.equal(201);
      const remaining = { id: Number(created.body.data.id), secret: String(created.body.data.secret) };
      const listed = await call({ url: atA() }, `/apis/v2/oauth-apps/${client.clientId}`, { token: manage });
      const revokedId = (listed.body.data.secrets as Array<{ id: number }>).map((s) => s.id).find((id) => id !== remaining.id)!;

      // The first secret works at B: a code exchange and two refreshes.
      const browser = new Browser(atA());
      const first = await exchangeAtB(client, client.clientSecret, await codeAtA(browser, client));
      expect(first.status, first.text).to.equal(200);
      let refreshToken = String(first.body.refresh_token);
      for (let i = 0; i < 2; i += 1) {
        const refreshed = await refreshAtB(client, client.clientSecret, refreshToken);
        expect(refreshed.status, refreshed.text).to.equal(200);
        refreshToken = String(refreshed.body.refresh_token);
      }
      const code = await codeAtA(browser, client);

      const deleted = await call({ url: atA() }, `/apis/v2/oauth-apps/${client.clientId}/secrets/${revokedId}`, { method: 'DELETE', token: manage });
      expect(deleted.status, deleted.text).to.equal(204);

      expectTokenError(await exchangeAtB(client, client.clientSecret, code), 401, 'invalid_client');
      expectTokenError(await refreshAtB(client, client.clientSecret, refreshToken), 401, 'invalid_client');
      // A refused client never reached the grant: the same code and refresh token serve the remaining secret.
      const exchanged = await exchangeAtB(client, remaining.secret, code);
      expect(exchanged.status, exchanged.text).to.equal(200);
      const refreshed = await refreshAtB(client, remaining.secret, refreshToken);
      expect(refreshed.status, refreshed.text).to.equal(200);
    });

    it('refuses an access token revoked at the other instance\'s revocation endpoint (RFC 7009)', async () => {
      const client = await makeClient(database.db);
      const tokens = await oauthTokens(atA(), client, client.user);
      await warmApi(tokens.accessToken);

      const endpoint = (await discovery(atA())).revocation_endpoint!;
      const revoked = await call({ url: atA() }, endpoint, { method: 'POST', authorization: basicAuth(client.clientId, client.clientSecret), form: { token: tokens.accessToken, token_type_hint: 'access_token' } });
      expect(revoked.status, revoked.text).to.equal(200);

      expectInvalidToken({ url: issuer }, await apiAtB(tokens.accessToken));
    });

    it('refuses the access and refresh tokens of an application the person revoked at the other instance', async () => {
      const { client, tokens, second } = await tokensUsedAtB();

      const settings = await signIn(atA(), client.user);
      await settings.submit(`/account/settings/applications/${client.clientId}/revoke`).expect(302, '/account/settings/applications?notice=app-revoked');

      expectInvalidToken({ url: issuer }, await apiAtB(tokens.accessToken));
      expectInvalidToken({ url: issuer }, await apiAtB(second.accessToken));
      expectTokenError(await refreshAtB(client, client.clientSecret, second.refreshToken), 400, 'invalid_grant');
    });

    it('refuses everything of an application its owner deleted at the other instance', async () => {
      const { client, tokens, second } = await tokensUsedAtB();
      const exchanged = await exchangeAtB(client, client.clientSecret, await codeAtA(tokens.browser, client));
      expect(exchanged.status, exchanged.text).to.equal(200);
      // A path: the balancer's request goes to the second instance, whatever the issuer's address.
      const request = authorizeUrl('', client);
      const started = await atB(request);
      expect(started.status, started.text).to.equal(302);
      expect(started.headers.get('location')).to.match(/\/interaction\//);
      const code = await codeAtA(tokens.browser, client);

      const deleted = await call({ url: atA() }, `/apis/v2/oauth-apps/${client.clientId}`, { method: 'DELETE', token: await ownerToken(client) });
      expect(deleted.status, deleted.text).to.equal(204);

      expectInvalidToken({ url: issuer }, await apiAtB(tokens.accessToken));
      expectInvalidToken({ url: issuer }, await apiAtB(second.accessToken));
      expectTokenError(await refreshAtB(client, client.clientSecret, second.refreshToken), 401, 'invalid_client');
      expectTokenError(await exchangeAtB(client, client.clientSecret, code), 401, 'invalid_client');
      const page = await atB(request);
      expect(page.status, page.text).to.equal(400);
      expect(page.headers.get('location')).to.equal(null);
      expect(errorMessage(page.text)).to.match(/does not exist on this server, or it was deleted/);
    });

    it('refuses a personal token its user revoked at the other instance, and one reported there as leaked', async () => {
      const user = await makeUser(database.db);
      const [revoked, leaked, kept] = [await personalToken(database.db, user.id, { name: 'revoked' }), await personalToken(database.db, user.id, { name: 'leaked' }), await personalToken(database.db, user.id, { name: 'kept' })];
      await warmApi(revoked, leaked, kept);

      const { id } = (await listAccessTokens(database.db, user.id)).find((t) => t.name === 'revoked')!;
      const settings = await signIn(atA(), user);
      await settings.submit(`/account/settings/tokens/${id}/revoke`).expect(302, '/account/settings/tokens?notice=token-revoked');
      expectInvalidToken({ url: issuer }, await apiAtB(revoked));

      const reported = await call({ url: atA() }, '/apis/v2/credentials/revoke', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ credentials: [leaked] }) });
      expect(reported.status, reported.text).to.equal(202);
      expectInvalidToken({ url: issuer }, await apiAtB(leaked));

      // The user's other token is untouched.
      expect((await apiAtB(kept)).status).to.equal(200);
    });

    it("shows on the other instance's pages, at once, the name an account gave itself at this one", async () => {
      const user = await makeUser(database.db);
      const site = await signIn(atA(), user);
      const profileAtB = async () => {
        const page = await atB('/account/settings/profile', { headers: { cookie: site.cookieHeader() } });
        expect(page.status, page.text.slice(0, 300)).to.equal(200);
        return /id="name"[^>]*value="([^"]*)"/.exec(page.text)?.[1];
      };
      for (let i = 0; i < 3; i += 1) expect(await profileAtB()).to.equal(user.name);
      await site.get('/account/settings/profile').expect(200);
      await site.submit('/account/settings/profile', { name: 'Renamed At A', email: user.email }).expect(302, '/account/settings/profile?notice=profile-saved');
      expect(await profileAtB()).to.equal('Renamed At A');
    });

    it('refuses the OAuth and personal tokens of an account an administrator disabled at the other instance', async () => {
      const client = await makeClient(database.db);
      const user = await makeUser(database.db);
      const tokens = await oauthTokens(atA(), client, user);
      const personal = await personalToken(database.db, user.id);
      const refreshed = await refreshAtB(client, client.clientSecret, tokens.refreshToken);
      expect(refreshed.status, refreshed.text).to.equal(200);
      await warmApi(tokens.accessToken, String(refreshed.body.access_token), personal);

      const admin = await makeUser(database.db);
      await setSiteAdmin(database.db, CLI, admin, true);
      const site = await signIn(atA(), admin);
      await site.get(`/admin/users/${user.id}/disable`).expect(200);
      await site.submit(`/admin/users/${user.id}/disable`).expect(302, `/admin/users/${user.id}?notice=disabled`);

      expectInvalidToken({ url: issuer }, await apiAtB(tokens.accessToken));
      expectInvalidToken({ url: issuer }, await apiAtB(String(refreshed.body.access_token)));
      expectInvalidToken({ url: issuer }, await apiAtB(personal));
      expectTokenError(await refreshAtB(client, client.clientSecret, String(refreshed.body.refresh_token)), 400, 'invalid_grant');
    });
  });
});
