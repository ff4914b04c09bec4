import { spawn, type ChildProcess } from 'node:child_process';
import { expect } from 'chai';
import { freePort, waitFor } from '../helpers/app.js';
import { Browser } from '../helpers/browser.js';
import { freshDatabase, TEST_DATABASE_URL, TEST_REDIS_URL, type TestDatabase } from '../helpers/db.js';
import { makeClient } from '../helpers/factories.js';
import { authorize } from '../helpers/oauth.js';

/**
 * A request to one instance as a load balancer forwards it: to that instance's address, naming
 * the public host (the issuer's) in `Host`, which is the only host an instance answers for.
 */
async function viaBalancer(instance: string, issuer: string, path: string, options: { method?: string; headers?: Record<string, string> } = {}) {
  const { status, text } = await new Browser(instance).request(path, { method: options.method, headers: { ...options.headers, host: new URL(issuer).host } });
  return { status, body: (text ? JSON.parse(text) : {}) as Record<string, unknown> };
}

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
      const child = spawn(process.execPath, ['--import', 'tsx', 'src/index.ts'], {
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
});
