import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { Agent, request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { Redis } from 'ioredis';
import { call } from '../helpers/api.js';
import { describeEachProfile, freePort, waitFor } from '../helpers/app.js';
import { Browser } from '../helpers/browser.js';
import { freshDatabase, TEST_REDIS_URL, type Profile, type TestDatabase } from '../helpers/db.js';
import { makeClient, makeUser } from '../helpers/factories.js';
import { authorize, oauthTokens, refresh, tokenRequest } from '../helpers/oauth.js';
import { nodeArgsFor } from '../helpers/processes.js';

/**
 * The server as `npm start` runs it (its entry point, with tsx), stopped by signals the way a
 * process manager or a rolling restart stops it.
 */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

interface Server {
  url: string;
  port: number;
  child: ChildProcess;
  /** The exit code once it has exited (null: ended by a signal). */
  exited: Promise<number | null>;
  output(): string;
  /** The JSON log lines of stdout. */
  logs(): Array<Record<string, unknown>>;
}

/** Starts src/index.ts on `port` and waits until it listens. */
async function startServer(database: TestDatabase, profile: Profile, port: number, mailDir: string, env: Record<string, string> = {}): Promise<Server> {
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, nodeArgsFor('src/index.ts'), {
    cwd: ROOT,
    env: {
      ...process.env,
      NODE_ENV: 'test',
      LOG_LEVEL: 'info',
      HOST: '127.0.0.1',
      PORT: String(port),
      ISSUER: url,
      DATABASE_URL: database.url,
      DATABASE_POOLING: database.pooling,
      REDIS_URL: profile === 'postgres+redis' ? TEST_REDIS_URL! : '',
      MAIL_DIR: mailDir,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let gone = false;
  void exited.then(() => (gone = true));
  await waitFor(async () => gone || output.includes('identity provider started'), () => `the server did not start: ${output}`, 30_000);
  if (gone) throw new Error(`the server exited at start: ${output}`);
  const logs = () =>
    output
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  return { url, port, child, exited, output: () => output, logs };
}

/** Whether a new connection to `port` is refused (the server no longer accepts). */
function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), resolve(false)));
    socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'ECONNREFUSED'));
  });
}

/**
 * Whether the server has read every byte sent to it on `port` (`ss`: no established connection
 * to it has unread data), over at least `connections` connections: each request sent has begun
 * there. A connection the server has not read from yet is, to Node, an idle one.
 */
async function serverReadEverything(port: number, connections: number): Promise<boolean> {
  const { stdout } = await promisify(execFile)('ss', ['-Htn', 'state', 'established', `( sport = :${port} )`]);
  const receiveQueues = stdout.split('\n').filter((line) => line.trim()).map((line) => line.trim().split(/\s+/)[0]);
  return receiveQueues.length >= connections && receiveQueues.every((queue) => queue === '0');
}

type RawAnswer = { status: number; headers: Record<string, string>; body: string };

/** Reads what the server sends on `socket` until it closes the connection, as one HTTP answer (or null: closed without one). */
function answerOn(socket: Socket): Promise<RawAnswer | null> {
  return new Promise((resolve) => {
    let raw = '';
    socket.setEncoding('utf8').on('data', (chunk: string) => (raw += chunk));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      if (!raw) return resolve(null);
      const [head = '', body = ''] = raw.split('\r\n\r\n');
      const [statusLine = '', ...lines] = head.split('\r\n');
      const headers = Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]));
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body });
    });
  });
}

/**
 * A request whose last header line is held back: its connection is busy (a request has begun), so
 * a drain waits for it; `finish` sends the rest and reads the answer, as a load balancer's health
 * check on a kept-alive connection would meet the draining server.
 */
async function heldRequest(server: Server, path: string): Promise<{ finish(): Promise<RawAnswer | null> }> {
  const socket = connect(server.port, '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nConnection: keep-alive\r\n`);
  const answer = answerOn(socket);
  return {
    finish() {
      socket.write('\r\n');
      return answer;
    },
  };
}

type Answer = { status: number; location: string | undefined; connection: string | undefined; body: string; at: number; reused: boolean };

/** Posts the sign-in form of `browser` on a keep-alive connection; `sent` settles once the whole request is on the wire. */
function postSignIn(browser: Browser, agent: Agent, fields: Record<string, string>): { sent: Promise<void>; answer: Promise<Answer> } {
  const body = new URLSearchParams({ _csrf: browser.csrf, ...fields }).toString();
  let sent!: Promise<void>;
  const answer = new Promise<Answer>((resolve, reject) => {
    const req = request(new URL('/login', browser.base), { method: 'POST', agent, headers: { cookie: browser.cookieHeader(), 'content-type': 'application/x-www-form-urlencoded' } }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, location: res.headers.location, connection: res.headers.connection, body: text, at: performance.now(), reused: req.reusedSocket }));
      res.on('error', reject);
    });
    // A refused or reset request is an answer the test reports (status 0), not an exception.
    req.on('error', (err) => resolve({ status: 0, location: undefined, connection: undefined, body: String(err), at: performance.now(), reused: req.reusedSocket }));
    sent = new Promise((done) => req.once('finish', () => done()));
    req.end(body);
  });
  return { sent, answer };
}

/** The server runs with its default Redis key prefix; what it left there goes with the test database. */
async function dropRedisKeys(profile: Profile): Promise<void> {
  if (profile !== 'postgres+redis') return;
  const redis = new Redis(TEST_REDIS_URL!);
  const keys = await redis.keys('idp:*');
  if (keys.length) await redis.del(...keys);
  await redis.quit();
}

/** The last log line whose message starts with `stopped`. */
function stoppedLine(server: Server): Record<string, unknown> | undefined {
  return server.logs().findLast((line) => String(line.msg).startsWith('stopped'));
}

describe('Graceful shutdown', function () {
  this.timeout(120_000);

  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'idp-shutdown-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  describeEachProfile('SIGTERM', function (profile) {
    let database: TestDatabase;
    let server: Server | undefined;
    before(async () => {
      database = await freshDatabase(profile);
    });
    afterEach(async () => {
      if (server?.child.exitCode === null) server.child.kill('SIGKILL');
      await server?.exited;
      server = undefined;
    });
    after(async () => {
      await database.drop();
      await dropRedisKeys(profile);
    });
    const start = async (env: Record<string, string> = {}) => (server = await startServer(database, profile, await freePort(), join(dir, 'mail'), env));

    it('with 50 sign-ins in flight answers every one, closes their connections, says draining on /readyz and exits 0', async () => {
      const user = await makeUser(database.db);
      // Every sign-in waits for one hashing slot, so the 50 are still under way when the signal comes.
      const idp = await start({ KDF_CONCURRENCY: '1', KDF_QUEUE: '64', RATE_LIMIT_SIGNIN_IP: 'off', RATE_LIMIT_SIGNIN_ACCOUNT: 'off', RATE_LIMIT_SIGNIN_ACCOUNT_IP: 'off' });
      const browsers = await Promise.all(
        Array.from({ length: 50 }, async () => {
          const browser = new Browser(idp.url);
          await browser.get('/login').expect(200);
          return browser;
        }),
      );
      const ready = await call(idp, '/readyz');
      expect(ready.status, ready.text).to.equal(200);
      const readyz = await heldRequest(idp, '/readyz');
      const healthz = await heldRequest(idp, '/healthz');

      const agent = new Agent({ keepAlive: true, maxSockets: 64 });
      const signIns = browsers.map((browser) => postSignIn(browser, agent, { login: user.username, password: user.password }));
      await Promise.all(signIns.map((s) => s.sent));
      await waitFor(() => serverReadEverything(idp.port, 52), () => 'the server did not read the 50 sign-ins', 20_000);
      const signalled = performance.now();
      idp.child.kill('SIGTERM');

      await waitFor(() => refused(idp.port), () => `still accepting connections after SIGTERM: ${idp.output()}`, 5000);
      const draining = await readyz.finish();
      const alive = await healthz.finish();
      const answers = await Promise.all(signIns.map((s) => s.answer));
      const code = await idp.exited;
      agent.destroy();

      expect(draining?.status, JSON.stringify(draining)).to.equal(503);
      expect(JSON.parse(draining!.body)).to.deep.equal({ status: 'draining' });
      expect(draining!.headers.connection).to.equal('close');
      expect(alive?.status, JSON.stringify(alive)).to.equal(200);
      expect(JSON.parse(alive!.body)).to.deep.equal({ status: 'ok' });

      const lost = answers.filter((answer) => answer.status !== 302).map((answer) => `${answer.status} ${Math.round(answer.at - signalled)} ms after the signal: ${answer.body.slice(0, 200)}`);
      expect(lost, idp.output().slice(-3000)).to.deep.equal([]);
      for (const answer of answers) {
        expect(answer.status, answer.body.slice(0, 300)).to.equal(302);
        expect(answer.location).to.equal('/groups');
      }
      const afterSignal = answers.filter((answer) => answer.at > signalled);
      // Most sign-ins were still hashing when the signal came: a drain that waited for nothing would fail here.
      expect(afterSignal.length, `answered after the signal: ${afterSignal.length}`).to.be.greaterThan(25);
      // Answered during the drain: its connection closes. An answer already on its way when the server
      // took the signal keeps the keep-alive it was sent with (the server closes that connection once
      // it is idle), and with one hashing slot at most one sign-in is answered at a time, so at most
      // one of those arriving after the signal was already on its way.
      const keptAlive = afterSignal.filter((answer) => answer.connection !== 'close');
      expect(keptAlive.length, `answered after the signal with Connection: ${keptAlive.map((a) => a.connection).join(', ')}`).to.be.at.most(1);

      expect(code, idp.output()).to.equal(0);
      const stopped = stoppedLine(idp);
      expect(stopped, idp.output()).to.include({ msg: 'stopped: every request in flight was answered', signal: 'SIGTERM', level: 30 });
      expect(Number(stopped!.inFlight)).to.be.at.least(afterSignal.length);
    });

    it('with SHUTDOWN_DELAY_S answers 50 sign-ins just written on kept-alive connections and those arriving during the delay, each closing its connection', async () => {
      const user = await makeUser(database.db);
      const idp = await start({
        SHUTDOWN_DELAY_S: '4',
        SHUTDOWN_TIMEOUT_S: '60',
        KDF_CONCURRENCY: '1',
        KDF_QUEUE: '128',
        RATE_LIMIT_SIGNIN_IP: 'off',
        RATE_LIMIT_SIGNIN_ACCOUNT: 'off',
        RATE_LIMIT_SIGNIN_ACCOUNT_IP: 'off',
      });
      const browsers = await Promise.all(
        Array.from({ length: 70 }, async () => {
          const browser = new Browser(idp.url);
          await browser.get('/login').expect(200);
          return browser;
        }),
      );
      // 50 connections, each used once and kept alive: idle to the server when the sign-ins are written on them.
      const agent = new Agent({ keepAlive: true, maxSockets: 50 });
      await Promise.all(Array.from({ length: 50 }, () => new Promise<void>((resolve, reject) => request(`${idp.url}/healthz`, { agent }, (res) => res.resume().on('end', resolve)).on('error', reject).end())));

      const signIns = browsers.slice(0, 50).map((browser) => postSignIn(browser, agent, { login: user.username, password: user.password }));
      await Promise.all(signIns.map((s) => s.sent));
      // At once: the server has not read most of them yet, and to it their connections are idle.
      const signalled = performance.now();
      idp.child.kill('SIGTERM');

      // A load balancer that has not yet seen /readyz turn 503 keeps sending, on new connections.
      const lateAgent = new Agent({ keepAlive: true });
      const late: Array<Promise<Answer>> = [];
      for (const browser of browsers.slice(50)) {
        late.push(postSignIn(browser, lateAgent, { login: user.username, password: user.password }).answer);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      // A refused connection ends the wait too, and fails below.
      let readyz: { status: number; body: string } = { status: 0, body: '' };
      const ask = () => fetch(`${idp.url}/readyz`).then(async (res) => ({ status: res.status, body: await res.text() }), (err: Error) => ({ status: 0, body: String(err.cause ?? err) }));
      await waitFor(async () => [0, 503].includes((readyz = await ask()).status), () => `/readyz did not turn 503: ${idp.output()}`);

      const answers = await Promise.all(signIns.map((s) => s.answer));
      const lateAnswers = await Promise.all(late);
      const code = await idp.exited;
      agent.destroy();
      lateAgent.destroy();

      expect(answers.filter((answer) => answer.reused).length, 'sign-ins sent on kept-alive connections').to.equal(50);
      const lost = [...answers, ...lateAnswers]
        .filter((answer) => answer.status !== 302 || answer.location !== '/groups')
        .map((answer) => `${answer.status} ${Math.round(answer.at - signalled)} ms after the signal: ${answer.body.slice(0, 200)}`);
      expect(lost, idp.output().slice(-3000)).to.deep.equal([]);
      expect(readyz.status, readyz.body).to.equal(503);
      expect(JSON.parse(readyz.body)).to.deep.equal({ status: 'draining' });
      for (const answer of lateAnswers) expect(answer.connection, 'a request that arrives during the delay is answered, then its connection closes').to.equal('close');
      // Most were still hashing (one at a time) when the signal came: a test that raced nothing would fail here.
      expect(answers.filter((answer) => answer.at > signalled).length, 'sign-ins answered after the signal').to.be.at.least(10);
      // The first may have been answered before the process handled the signal; the later ones close their connections.
      for (const answer of answers.filter((a) => a.at - signalled > 1000)) expect(answer.connection).to.equal('close');

      expect(code, idp.output()).to.equal(0);
      expect(idp.logs().find((line) => String(line.msg).startsWith('stopping:')), idp.output()).to.include({ delayS: 4, signal: 'SIGTERM' });
      expect(stoppedLine(idp), idp.output()).to.include({ msg: 'stopped: every request in flight was answered', signal: 'SIGTERM', level: 30 });
    });

    it('closes idle keep-alive connections at once instead of waiting for them', async () => {
      const idp = await start();
      const idle = connect(idp.port, '127.0.0.1');
      await new Promise((resolve) => idle.once('connect', resolve));
      idle.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${idp.port}\r\n\r\n`);
      await new Promise((resolve) => idle.once('data', resolve));
      const closed = new Promise((resolve) => idle.once('close', resolve));
      idle.on('error', () => undefined);
      const signalled = performance.now();
      idp.child.kill('SIGTERM');
      expect(await idp.exited, idp.output()).to.equal(0);
      await closed;
      // Node keeps an idle connection 5 s by default; the drain does not wait for that.
      expect(performance.now() - signalled).to.be.below(4000);
    });

    it('past SHUTDOWN_TIMEOUT_S cuts a request that never ends, says so, and exits 1', async () => {
      const idp = await start({ SHUTDOWN_TIMEOUT_S: '1' });
      // A form post that promises 1000 bytes and sends 9: the server waits for the rest.
      const hung = connect(idp.port, '127.0.0.1');
      await new Promise((resolve) => hung.once('connect', resolve));
      hung.write(`POST /login HTTP/1.1\r\nHost: 127.0.0.1:${idp.port}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\nlogin=abc`);
      const answer = answerOn(hung);
      await new Promise((resolve) => setTimeout(resolve, 300));
      const signalled = performance.now();
      idp.child.kill('SIGTERM');
      const code = await idp.exited;
      const took = performance.now() - signalled;

      expect(code, idp.output()).to.equal(1);
      expect(await answer, 'the hung request is cut, not answered').to.equal(null);
      expect(took).to.be.within(900, 8000);
      expect(stoppedLine(idp), idp.output()).to.include({ msg: 'stopped: SHUTDOWN_TIMEOUT_S (1 s) passed, 1 request(s) in flight were cut', level: 50, cut: 1, signal: 'SIGTERM' });
    });

    it('a second signal during the drain stops at once', async () => {
      const idp = await start({ SHUTDOWN_TIMEOUT_S: '60' });
      const hung = connect(idp.port, '127.0.0.1');
      await new Promise((resolve) => hung.once('connect', resolve));
      hung.on('error', () => undefined);
      hung.write(`POST /login HTTP/1.1\r\nHost: 127.0.0.1:${idp.port}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\nlogin=abc`);
      await new Promise((resolve) => setTimeout(resolve, 300));
      idp.child.kill('SIGTERM');
      await waitFor(() => refused(idp.port), () => `still accepting connections after SIGTERM: ${idp.output()}`, 5000);
      const signalled = performance.now();
      idp.child.kill('SIGINT');
      const code = await idp.exited;
      expect(code, idp.output()).to.not.equal(0);
      expect(performance.now() - signalled).to.be.below(3000);
      expect(idp.output()).to.include('second signal while draining');
      hung.destroy();
    });
  });

  describeEachProfile('A restart', function (profile) {
    let database: TestDatabase;
    const servers: Server[] = [];
    before(async () => {
      database = await freshDatabase(profile);
    });
    after(async () => {
      for (const server of servers) if (server.child.exitCode === null) server.child.kill('SIGKILL');
      await Promise.all(servers.map((server) => server.exited));
      await database.drop();
      await dropRedisKeys(profile);
    });

    it('keeps an authorization code minted before it, and a refresh token: both are redeemed after it', async () => {
      const client = await makeClient(database.db);
      const port = await freePort();
      const first = await startServer(database, profile, port, join(dir, 'mail'));
      servers.push(first);
      const tokens = await oauthTokens(first.url, client, client.user);
      const callback = await authorize(tokens.browser, { ...client, scope: 'groups:read-only' }, client.user);
      const code = callback.searchParams.get('code')!;
      expect(code).to.be.a('string');

      first.child.kill('SIGTERM');
      expect(await first.exited, first.output()).to.equal(0);
      const second = await startServer(database, profile, port, join(dir, 'mail'));
      servers.push(second);

      const exchanged = await tokenRequest(second.url, { query: { client_id: client.clientId, client_secret: client.clientSecret, code, redirect_uri: client.redirectUri } });
      expect(exchanged.status, exchanged.text).to.equal(200);
      expect(exchanged.body.access_token).to.be.a('string');
      const me = await call(second, '/apis/v2/user', { token: String(exchanged.body.access_token) });
      expect(me.status, me.text).to.equal(200);
      expect(me.body.data).to.include({ username: client.user.username });

      const refreshed = await refresh(second.url, client, tokens.refreshToken);
      expect(refreshed.status, refreshed.text).to.equal(200);
      expect(refreshed.body.access_token).to.be.a('string');
      // The access token issued before the restart still works after it.
      expect((await call(second, '/apis/v2/user', { token: tokens.accessToken })).status).to.equal(200);

      second.child.kill('SIGTERM');
      expect(await second.exited, second.output()).to.equal(0);
    });
  });
});
