import { request } from 'node:http';
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { profiles, startIdp, type RunningIdp } from '../helpers/app.js';
import { makeApp, makeGroup, makeUser } from '../helpers/factories.js';
import { basicAuth, tokenRequest } from '../oauth/support.js';
import { createAccessToken } from '../../src/services/access-tokens.js';
import { findUserById } from '../../src/db/users.js';
import { verifyPassword } from '../../src/services/passwords.js';

/**
 * The abuse limits, driven over real HTTP. Each loopback address (127.0.0.1, 127.0.0.2, …) is a
 * different client IP to the server, so per-address limits are tried without trusting any
 * forwarded header.
 */

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** A person at one IP address: a cookie jar and requests sent from that loopback address. */
class Visitor {
  private cookies = new Map<string, string>();
  constructor(
    private readonly base: string,
    private readonly ip = '127.0.0.1',
  ) {}

  send(method: string, path: string, body?: Record<string, string>): Promise<Answer> {
    const url = new URL(path, this.base);
    const payload = body ? new URLSearchParams(body).toString() : undefined;
    const headers: Record<string, string> = {};
    if (this.cookies.size) headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    if (payload) headers['content-type'] = 'application/x-www-form-urlencoded';
    return new Promise((resolve, reject) => {
      const req = request(url, { method, headers, localAddress: this.ip }, (res) => {
        for (const line of res.headers['set-cookie'] ?? []) {
          const [pair] = line.split(';');
          const eq = pair!.indexOf('=');
          this.cookies.set(pair!.slice(0, eq), pair!.slice(eq + 1));
        }
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
      });
      req.on('error', reject);
      req.end(payload);
    });
  }

  /** Fills in the page's form (with its CSRF token) and submits it. */
  async submit(page: string, fields: Record<string, string>): Promise<Answer> {
    const form = await this.send('GET', page);
    const csrf = /name="_csrf" value="([^"]+)"/.exec(form.text)?.[1];
    if (!csrf) throw new Error(`no form on ${page}: ${form.status}`);
    return this.send('POST', page, { _csrf: csrf, ...fields });
  }

  signIn(login: string, password: string): Promise<Answer> {
    return this.submit('/login', { login, password });
  }
}

const WRONG = 'not the password';

/** `count` visitors open the sign-in form first, then all submit a wrong password at the same moment. */
async function wrongPasswordsAtOnce(base: string, login: string, count: number): Promise<Answer[]> {
  const visitors = await Promise.all(
    Array.from({ length: count }, async () => {
      const v = new Visitor(base);
      const form = await v.send('GET', '/login');
      return { v, csrf: /name="_csrf" value="([^"]+)"/.exec(form.text)![1]! };
    }),
  );
  return Promise.all(visitors.map(({ v, csrf }) => v.send('POST', '/login', { _csrf: csrf, login, password: WRONG })));
}

for (const profile of profiles()) {
  describe(`abuse limits (${profile})`, () => {
    describe('sign-in failures for one account from one address (the default 5 in 15 minutes)', () => {
      let idp: RunningIdp;
      before(async () => {
        idp = await startIdp(profile);
      });
      after(() => idp.stop());

      it('refuses the 6th wrong password with 429, Retry-After and the wait in words, and the right one too', async () => {
        const user = await makeUser(idp.idp.db);
        const visitor = new Visitor(idp.url);
        for (let i = 0; i < 5; i += 1) expect((await visitor.signIn(user.username, WRONG)).status).to.equal(401);
        const sixth = await visitor.signIn(user.username, WRONG);
        expect(sixth.status).to.equal(429);
        expect(Number(sixth.headers['retry-after'])).to.be.within(1, 60);
        expect(sixth.text).to.match(/Too many failed sign-in attempts\. Try again in (1 minute|\d+ seconds?)\./);
        const right = await visitor.signIn(user.username, user.password);
        expect(right.status).to.equal(429);
        expect(right.text).to.include('Too many failed sign-in attempts');
      });

      it('lets no more than 5 of 16 wrong passwords sent at once be checked; the rest get 429', async () => {
        const user = await makeUser(idp.idp.db);
        const answers = await wrongPasswordsAtOnce(idp.url, user.username, 16);
        const statuses = answers.map((a) => a.status);
        expect(statuses.filter((s) => s === 401).length, statuses.join(' ')).to.be.at.most(5);
        expect(statuses.filter((s) => s !== 401).every((s) => s === 429 || s === 503), statuses.join(' ')).to.equal(true);
      });

      it('counts the account by whichever name it is given (username or e-mail, any case)', async () => {
        const user = await makeUser(idp.idp.db);
        const visitor = new Visitor(idp.url);
        for (const login of [user.username, user.email, user.username.toUpperCase(), user.email, user.username]) {
          expect((await visitor.signIn(login, WRONG)).status).to.equal(401);
        }
        expect((await visitor.signIn(user.email.toUpperCase(), user.password)).status).to.equal(429);
      });

      it('leaves the same account alone from another address', async () => {
        const user = await makeUser(idp.idp.db);
        const here = new Visitor(idp.url);
        for (let i = 0; i < 6; i += 1) await here.signIn(user.username, WRONG);
        expect((await new Visitor(idp.url, '127.0.0.2').signIn(user.username, user.password)).status).to.equal(302);
      });

      it('starts afresh after a right password', async () => {
        const user = await makeUser(idp.idp.db);
        const visitor = new Visitor(idp.url);
        for (let i = 0; i < 4; i += 1) await visitor.signIn(user.username, WRONG);
        expect((await visitor.signIn(user.username, user.password)).status).to.equal(302);
        const again = new Visitor(idp.url);
        for (let i = 0; i < 4; i += 1) expect((await again.signIn(user.username, WRONG)).status).to.equal(401);
      });

      it('limits the authorization flow\'s sign-in page the same way', async () => {
        const user = await makeUser(idp.idp.db);
        const group = await makeGroup(idp.idp.db, user.id);
        const app = await makeApp(idp.idp.db, user.id, group.id, { callbackURL: 'http://127.0.0.1:9999/callback' });
        const visitor = new Visitor(idp.url);
        let page = await visitor.send('GET', `/login/oauth/authorize?client_id=${app.clientId}&redirect_uri=${encodeURIComponent('http://127.0.0.1:9999/callback')}&state=s`);
        while (page.status >= 300 && page.status < 400) page = await visitor.send('GET', String(page.headers.location));
        const action = /action="(\/interaction\/[^"]+\/login)"/.exec(page.text)![1]!;
        const csrf = /name="_csrf" value="([^"]+)"/.exec(page.text)![1]!;
        const statuses: number[] = [];
        for (let i = 0; i < 6; i += 1) statuses.push((await visitor.send('POST', action, { _csrf: csrf, login: user.username, password: WRONG })).status);
        expect(statuses).to.deep.equal([401, 401, 401, 401, 401, 429]);
      });
    });

    describe('doubling delays', () => {
      let idp: RunningIdp;
      before(async () => {
        idp = await startIdp(profile, { RATE_LIMIT_SIGNIN_ACCOUNT_IP: '2/15m' });
      });
      after(() => idp.stop());

      it('blocks for a minute past the limit, and twice as long after the next failure', async () => {
        const user = await makeUser(idp.idp.db);
        const visitor = new Visitor(idp.url);
        await visitor.signIn(user.username, WRONG);
        await visitor.signIn(user.username, WRONG);
        const first = await visitor.signIn(user.username, WRONG);
        expect(Number(first.headers['retry-after'])).to.be.within(50, 60);
        // The block ends; the next failure blocks for two minutes.
        const blocked = (await idp.idp.db('rate_limits').select('key')).map((r: { key: string }) => r.key);
        if (idp.idp.redis) {
          for (const k of await idp.idp.redis.keys(`*rl:signin-account-ip*`)) await idp.idp.redis.del(k);
        } else {
          await idp.idp.db('rate_limits').whereIn('key', blocked.filter((k: string) => k.startsWith('signin-account-ip'))).del();
        }
        expect((await visitor.signIn(user.username, WRONG)).status).to.equal(401);
        const second = await visitor.signIn(user.username, WRONG);
        expect(second.status).to.equal(429);
        expect(Number(second.headers['retry-after'])).to.be.within(110, 120);
        expect(second.text).to.include('Try again in 2 minutes');
      });
    });

    describe('sign-in failures from one address across accounts', () => {
      let idp: RunningIdp;
      before(async () => {
        idp = await startIdp(profile, { RATE_LIMIT_SIGNIN_IP: '3/1h' });
      });
      after(() => idp.stop());

      it('refuses the address after its failures, whatever account it tries next', async () => {
        const visitor = new Visitor(idp.url, '127.0.0.3');
        for (let i = 0; i < 3; i += 1) expect((await visitor.signIn(`nobody-${i}`, WRONG)).status).to.equal(401);
        const user = await makeUser(idp.idp.db);
        const refused = await visitor.signIn(user.username, user.password);
        expect(refused.status).to.equal(429);
        expect(Number(refused.headers['retry-after'])).to.be.within(3000, 3600);
        expect((await new Visitor(idp.url, '127.0.0.4').signIn(user.username, user.password)).status).to.equal(302);
      });
    });

    describe('sign-in failures for one account from many addresses', () => {
      let idp: RunningIdp;
      before(async () => {
        idp = await startIdp(profile, { RATE_LIMIT_SIGNIN_ACCOUNT: '3/1h', RATE_LIMIT_SIGNIN_ACCOUNT_IP: 'off', RATE_LIMIT_SIGNIN_IP: 'off' });
      });
      after(() => idp.stop());

      it('slows the account to one try a minute, without locking its owner out', async () => {
        const user = await makeUser(idp.idp.db);
        for (let i = 0; i < 3; i += 1) await new Visitor(idp.url, `127.0.1.${i + 1}`).signIn(user.username, WRONG);
        const owner = new Visitor(idp.url, '127.0.2.1');
        expect((await owner.signIn(user.username, user.password)).status).to.equal(302);
        const stranger = await new Visitor(idp.url, '127.0.2.2').signIn(user.username, WRONG);
        expect(stranger.status).to.equal(429);
        expect(Number(stranger.headers['retry-after'])).to.be.within(1, 60);
      });
    });

    describe('sign-ups from one address', () => {
      let idp: RunningIdp;
      before(async () => {
        idp = await startIdp(profile, { RATE_LIMIT_SIGNUP_IP: '2/1h' });
      });
      after(() => idp.stop());

      it('counts sign-ups sent at once, and not the ones refused for a bad field', async () => {
        const tag = randomBytes(3).toString('hex');
        const bad = await new Visitor(idp.url, '127.0.0.6').submit('/signup', { username: `bad-${tag}`, email: 'not an e-mail', password: 'a long enough passphrase' });
        expect(bad.status).to.equal(400);
        const forms = await Promise.all(
          Array.from({ length: 6 }, async (_, i) => {
            const v = new Visitor(idp.url, '127.0.0.6');
            const page = await v.send('GET', '/signup');
            return { v, i, csrf: /name="_csrf" value="([^"]+)"/.exec(page.text)![1]! };
          }),
        );
        const answers = await Promise.all(
          forms.map(({ v, i, csrf }) => v.send('POST', '/signup', { _csrf: csrf, username: `par${i}-${tag}`, email: `par${i}-${tag}@example.test`, password: 'a long enough passphrase' })),
        );
        const statuses = answers.map((a) => a.status).sort();
        expect(statuses).to.deep.equal([302, 302, 429, 429, 429, 429]);
      });

      it('refuses the third account from one address with 429, keeping what was typed', async () => {
        const visitor = new Visitor(idp.url, '127.0.0.5');
        const signUp = (name: string) => visitor.submit('/signup', { username: name, email: `${name}@example.test`, password: 'a long enough passphrase' });
        const tag = randomBytes(3).toString('hex');
        expect((await signUp(`first-${tag}`)).status).to.equal(302);
        await visitor.send('POST', '/logout', {});
        const fresh = new Visitor(idp.url, '127.0.0.5');
        const second = await fresh.submit('/signup', { username: `second-${tag}`, email: `second-${tag}@example.test`, password: 'a long enough passphrase' });
        expect(second.status).to.equal(302);
        const third = await new Visitor(idp.url, '127.0.0.5').submit('/signup', { username: `third-${tag}`, email: `third-${tag}@example.test`, password: 'a long enough passphrase' });
        expect(third.status).to.equal(429);
        expect(third.headers['retry-after']).to.match(/^\d+$/);
        expect(third.text).to.include('Too many accounts were created from your network');
        expect(third.text).to.include(`third-${tag}`);
        expect(await idp.idp.db('users').where({ username: `third-${tag}` }).first()).to.equal(undefined);
      });
    });

    describe('failed client authentication (the default 10 a minute)', () => {
      let idp: RunningIdp;
      before(async () => {
        idp = await startIdp(profile);
      });
      after(() => idp.stop());

      it('refuses the client_id with 429 JSON and Retry-After after 10 failures, even with the right secret', async () => {
        const user = await makeUser(idp.idp.db);
        const group = await makeGroup(idp.idp.db, user.id);
        const app = await makeApp(idp.idp.db, user.id, group.id);
        const attempt = (secret: string) =>
          tokenRequest(idp.url, { form: { grant_type: 'refresh_token', refresh_token: 'hr_unknown' }, headers: { authorization: basicAuth(app.clientId, secret) } });
        for (let i = 0; i < 10; i += 1) expect((await attempt('hs_wrong')).body.error).to.equal('invalid_client');
        const refused = await attempt(app.clientSecret);
        expect(refused.status).to.equal(429);
        expect(refused.body.error).to.equal('rate_limited');
        expect(refused.body.error_description).to.match(/too many failed client authentications/);
        expect(Number(refused.headers.get('retry-after'))).to.be.within(1, 60);
        // Counted per client_id, at every client-authenticating endpoint.
        const revoke = await fetch(`${idp.url}/login/oauth/revoke`, {
          method: 'POST',
          headers: { authorization: basicAuth(app.clientId, app.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
          body: 'token=hr_unknown',
        });
        expect(revoke.status).to.equal(429);
      });

      it('counts a client_id sent in the form as well as in HTTP Basic', async () => {
        const user = await makeUser(idp.idp.db);
        const group = await makeGroup(idp.idp.db, user.id);
        const app = await makeApp(idp.idp.db, user.id, group.id);
        for (let i = 0; i < 10; i += 1) {
          await tokenRequest(idp.url, { form: { grant_type: 'refresh_token', refresh_token: 'hr_x', client_id: app.clientId, client_secret: 'hs_wrong' } });
        }
        const refused = await tokenRequest(idp.url, { query: { client_id: app.clientId, client_secret: app.clientSecret, code: 'x', redirect_uri: 'http://127.0.0.1:9999/callback' } });
        expect(refused.status).to.equal(429);
      });
    });

    describe('API requests per token', () => {
      let idp: RunningIdp;
      before(async () => {
        idp = await startIdp(profile, { RATE_LIMIT_API_TOKEN: '3/1h' });
      });
      after(() => idp.stop());

      it("sends GitHub's X-RateLimit-* headers and refuses the request past the limit with 429 JSON", async () => {
        const user = await makeUser(idp.idp.db);
        const { token } = await createAccessToken(idp.idp.db, user.id, { name: 'limits', scopes: ['groups:read-only'] });
        const call = () => fetch(`${idp.url}/apis/v2/user`, { headers: { authorization: `Bearer ${token}` } });
        const before = Math.floor(Date.now() / 1000);
        for (let i = 1; i <= 3; i += 1) {
          const res = await call();
          expect(res.status).to.equal(200);
          expect(res.headers.get('x-ratelimit-limit')).to.equal('3');
          expect(res.headers.get('x-ratelimit-used')).to.equal(String(i));
          expect(res.headers.get('x-ratelimit-remaining')).to.equal(String(3 - i));
          expect(Number(res.headers.get('x-ratelimit-reset'))).to.be.within(before + 3590, before + 3602);
        }
        const refused = await call();
        expect(refused.status).to.equal(429);
        expect(refused.headers.get('x-ratelimit-remaining')).to.equal('0');
        expect(Number(refused.headers.get('retry-after'))).to.be.within(3500, 3600);
        expect(((await refused.json()) as { error: string }).error).to.equal('rate_limited');
        const other = await createAccessToken(idp.idp.db, user.id, { name: 'other', scopes: ['groups:read-only'] });
        expect((await fetch(`${idp.url}/apis/v2/user`, { headers: { authorization: `Bearer ${other.token}` } })).status).to.equal(200);
      });
    });

    describe('two instances sharing storage', () => {
      let one: RunningIdp;
      let two: RunningIdp;
      before(async () => {
        const prefix = `idp-test:${randomBytes(4).toString('hex')}:`;
        one = await startIdp(profile, {}, undefined, prefix);
        two = await startIdp(profile, {}, one.database, prefix);
      });
      after(async () => {
        await two.stop();
        await one.stop();
      });

      it('counts failures made at either instance against the same limit', async () => {
        const user = await makeUser(one.idp.db);
        for (let i = 0; i < 5; i += 1) await new Visitor(i % 2 ? one.url : two.url).signIn(user.username, WRONG);
        expect((await new Visitor(one.url).signIn(user.username, user.password)).status).to.equal(429);
        expect((await new Visitor(two.url).signIn(user.username, user.password)).status).to.equal(429);
      });
    });

    describe('password hashing on sign-in', () => {
      let idp: RunningIdp;
      before(async () => {
        idp = await startIdp(profile);
      });
      after(() => idp.stop());

      it('rehashes an older scrypt hash with Argon2id at the next sign-in', async () => {
        const user = await makeUser(idp.idp.db);
        // The hash the service made before Argon2id, for this password (N = 2^15, r = 8, p = 1).
        const { scryptSync } = await import('node:crypto');
        const salt = randomBytes(16);
        const old = ['scrypt', 2 ** 15, 8, 1, salt.toString('base64url'), scryptSync(user.password, salt, 32, { N: 2 ** 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 }).toString('base64url')].join('$');
        await idp.idp.db('users').where({ id: user.id }).update({ password_hash: old });
        expect((await new Visitor(idp.url).signIn(user.username, user.password)).status).to.equal(302);
        const stored = (await findUserById(idp.idp.db, user.id))!;
        expect(stored.password_hash).to.match(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
        expect(await verifyPassword(user.password, stored.password_hash)).to.equal(true);
      });
    });

    describe('a bounded KDF queue', () => {
      let idp: RunningIdp;
      before(async () => {
        idp = await startIdp(profile, { KDF_CONCURRENCY: '1', KDF_QUEUE: '1', RATE_LIMIT_SIGNIN_IP: 'off', RATE_LIMIT_SIGNIN_ACCOUNT: 'off', RATE_LIMIT_SIGNIN_ACCOUNT_IP: 'off' });
      });
      after(() => idp.stop());

      it('answers sign-ins past the bound at once with 503 and Retry-After, and the others normally', async () => {
        const user = await makeUser(idp.idp.db);
        const answers = await wrongPasswordsAtOnce(idp.url, user.username, 12);
        const busy = answers.filter((a) => a.status === 503);
        expect(busy.length).to.be.at.least(1);
        expect(answers.filter((a) => a.status === 401).length).to.be.at.least(2);
        expect(answers.every((a) => a.status === 401 || a.status === 503)).to.equal(true);
        expect(busy[0]!.headers['retry-after']).to.match(/^\d+$/);
        expect(busy[0]!.text).to.include('The server is busy');
      });
    });
  });
}
