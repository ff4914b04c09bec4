import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { findUserById } from '../../src/db/users.js';
import { createAccessToken } from '../../src/services/access-tokens.js';
import { verifyPassword } from '../../src/services/passwords.js';
import { describeEachProfile, startIdp, useIdp, type RunningIdp } from '../helpers/app.js';
import { Browser, type Page } from '../helpers/browser.js';
import { CALLBACK, makeClient, makeUser } from '../helpers/factories.js';
import { csrfFrom, formAction } from '../helpers/html.js';
import { authorizeUrl, basicAuth, tokenRequest } from '../helpers/oauth.js';

/**
 * The abuse limits, driven over real HTTP. Each loopback address (127.0.0.1, 127.0.0.2, …) is a
 * different client IP to the server, so per-address limits are tried without trusting any
 * forwarded header.
 */

/** Opens `page` and submits its form, with the CSRF token the page carries. */
async function fillIn(browser: Browser, page: string, fields: Record<string, string>): Promise<Page> {
  const form = await browser.get(page);
  return browser.postForm(page, { _csrf: csrfFrom(form.text), ...fields });
}

const attemptSignIn = (browser: Browser, login: string, password: string) => fillIn(browser, '/login', { login, password });

const WRONG = 'not the password';

/** `count` visitors open the sign-in form first, then all submit a wrong password at the same moment. */
async function wrongPasswordsAtOnce(base: string, login: string, count: number): Promise<Page[]> {
  const visitors = await Promise.all(
    Array.from({ length: count }, async () => {
      const v = new Browser(base);
      await v.get('/login');
      return v;
    }),
  );
  return Promise.all(visitors.map((v) => v.submit('/login', { login, password: WRONG })));
}

describeEachProfile('abuse limits', (profile) => {
  describe('sign-in failures for one account from one address (the default 5 in 15 minutes)', () => {
    const idp = useIdp(profile);

    it('refuses the 6th wrong password with 429, Retry-After and the wait in words, and the right one too', async () => {
      const user = await makeUser(idp.db);
      const visitor = new Browser(idp.url);
      for (let i = 0; i < 5; i += 1) expect((await attemptSignIn(visitor, user.username, WRONG)).status).to.equal(401);
      const sixth = await attemptSignIn(visitor, user.username, WRONG);
      expect(sixth.status).to.equal(429);
      expect(Number(sixth.headers.get('retry-after'))).to.be.within(1, 60);
      expect(sixth.text).to.match(/Too many failed sign-in attempts\. Try again in (1 minute|\d+ seconds?)\./);
      const right = await attemptSignIn(visitor, user.username, user.password);
      expect(right.status).to.equal(429);
      expect(right.text).to.include('Too many failed sign-in attempts');
    });

    it('lets no more than 5 of 16 wrong passwords sent at once be checked; the rest get 429', async () => {
      const user = await makeUser(idp.db);
      const answers = await wrongPasswordsAtOnce(idp.url, user.username, 16);
      const statuses = answers.map((a) => a.status);
      expect(statuses.filter((s) => s === 401).length, statuses.join(' ')).to.be.at.most(5);
      expect(statuses.filter((s) => s !== 401).every((s) => s === 429 || s === 503), statuses.join(' ')).to.equal(true);
    });

    it('counts the account by whichever name it is given (username or e-mail, any case)', async () => {
      const user = await makeUser(idp.db);
      const visitor = new Browser(idp.url);
      for (const login of [user.username, user.email, user.username.toUpperCase(), user.email, user.username]) {
        expect((await attemptSignIn(visitor, login, WRONG)).status).to.equal(401);
      }
      expect((await attemptSignIn(visitor, user.email.toUpperCase(), user.password)).status).to.equal(429);
    });

    it('leaves the same account alone from another address', async () => {
      const user = await makeUser(idp.db);
      const here = new Browser(idp.url);
      for (let i = 0; i < 6; i += 1) await attemptSignIn(here, user.username, WRONG);
      expect((await attemptSignIn(new Browser(idp.url, { from: '127.0.0.2' }), user.username, user.password)).status).to.equal(302);
    });

    it('starts afresh after a right password', async () => {
      const user = await makeUser(idp.db);
      const visitor = new Browser(idp.url);
      for (let i = 0; i < 4; i += 1) await attemptSignIn(visitor, user.username, WRONG);
      expect((await attemptSignIn(visitor, user.username, user.password)).status).to.equal(302);
      const again = new Browser(idp.url);
      for (let i = 0; i < 4; i += 1) expect((await attemptSignIn(again, user.username, WRONG)).status).to.equal(401);
    });

    it('limits the authorization flow\'s sign-in page the same way', async () => {
      const app = await makeClient(idp.db);
      const visitor = new Browser(idp.url);
      const page = await visitor.follow(authorizeUrl(idp.url, { ...app, state: 's' }));
      const action = formAction(page.text, '/login');
      const statuses: number[] = [];
      for (let i = 0; i < 6; i += 1) statuses.push((await visitor.submit(action, { login: app.user.username, password: WRONG })).status);
      expect(statuses).to.deep.equal([401, 401, 401, 401, 401, 429]);
    });
  });

  describe('doubling delays', () => {
    const idp = useIdp(profile, { RATE_LIMIT_SIGNIN_ACCOUNT_IP: '2/15m' });

    it('blocks for a minute past the limit, and twice as long after the next failure', async () => {
      const user = await makeUser(idp.db);
      const visitor = new Browser(idp.url);
      await attemptSignIn(visitor, user.username, WRONG);
      await attemptSignIn(visitor, user.username, WRONG);
      const first = await attemptSignIn(visitor, user.username, WRONG);
      expect(Number(first.headers.get('retry-after'))).to.be.within(50, 60);
      // The block ends; the next failure blocks for two minutes.
      const blocked = (await idp.db('rate_limits').select('key')).map((r: { key: string }) => r.key);
      if (idp.idp.redis) {
        for (const k of await idp.idp.redis.keys(`*rl:signin-account-ip*`)) await idp.idp.redis.del(k);
      } else {
        await idp.db('rate_limits').whereIn('key', blocked.filter((k: string) => k.startsWith('signin-account-ip'))).del();
      }
      expect((await attemptSignIn(visitor, user.username, WRONG)).status).to.equal(401);
      const second = await attemptSignIn(visitor, user.username, WRONG);
      expect(second.status).to.equal(429);
      expect(Number(second.headers.get('retry-after'))).to.be.within(110, 120);
      expect(second.text).to.include('Try again in 2 minutes');
    });
  });

  describe('sign-in failures from one address across accounts', () => {
    const idp = useIdp(profile, { RATE_LIMIT_SIGNIN_IP: '3/1h' });

    it('refuses the address after its failures, whatever account it tries next', async () => {
      const visitor = new Browser(idp.url, { from: '127.0.0.3' });
      for (let i = 0; i < 3; i += 1) expect((await attemptSignIn(visitor, `nobody-${i}`, WRONG)).status).to.equal(401);
      const user = await makeUser(idp.db);
      const refused = await attemptSignIn(visitor, user.username, user.password);
      expect(refused.status).to.equal(429);
      expect(Number(refused.headers.get('retry-after'))).to.be.within(3000, 3600);
      expect((await attemptSignIn(new Browser(idp.url, { from: '127.0.0.4' }), user.username, user.password)).status).to.equal(302);
    });
  });

  describe('sign-in failures for one account from many addresses', () => {
    const idp = useIdp(profile, { RATE_LIMIT_SIGNIN_ACCOUNT: '3/1h', RATE_LIMIT_SIGNIN_ACCOUNT_IP: 'off', RATE_LIMIT_SIGNIN_IP: 'off' });

    it('slows the account to one try a minute, without locking its owner out', async () => {
      const user = await makeUser(idp.db);
      for (let i = 0; i < 3; i += 1) await attemptSignIn(new Browser(idp.url, { from: `127.0.1.${i + 1}` }), user.username, WRONG);
      const owner = new Browser(idp.url, { from: '127.0.2.1' });
      expect((await attemptSignIn(owner, user.username, user.password)).status).to.equal(302);
      const stranger = await attemptSignIn(new Browser(idp.url, { from: '127.0.2.2' }), user.username, WRONG);
      expect(stranger.status).to.equal(429);
      expect(Number(stranger.headers.get('retry-after'))).to.be.within(1, 60);
    });

    it('takes the account\'s point before the password is checked: of 24 wrong passwords sent at once from 24 addresses, at most 3 + 1 are checked', async () => {
      const user = await makeUser(idp.db);
      const visitors = await Promise.all(
        Array.from({ length: 24 }, async (_, i) => {
          const v = new Browser(idp.url, { from: `127.0.3.${i + 1}` });
          await v.get('/login');
          return v;
        }),
      );
      const answers = await Promise.all(visitors.map((v) => v.submit('/login', { login: user.username, password: WRONG })));
      const statuses = answers.map((a) => a.status);
      expect(statuses.filter((s) => s === 401).length, statuses.join(' ')).to.be.within(1, 4);
      expect(statuses.filter((s) => s !== 401).every((s) => s === 429), statuses.join(' ')).to.equal(true);
    });
  });

  describe('sign-ups from one address', () => {
    const idp = useIdp(profile, { RATE_LIMIT_SIGNUP_IP: '2/1h' });

    it('counts sign-ups sent at once, and the ones refused for a bad field', async () => {
      const tag = randomBytes(3).toString('hex');
      const bad = await fillIn(new Browser(idp.url, { from: '127.0.0.6' }), '/signup', { username: `bad-${tag}`, email: 'not an e-mail', password: 'a long enough passphrase' });
      expect(bad.status).to.equal(400);
      const forms = await Promise.all(
        Array.from({ length: 6 }, async () => {
          const v = new Browser(idp.url, { from: '127.0.0.6' });
          await v.get('/signup');
          return v;
        }),
      );
      const answers = await Promise.all(
        forms.map((v, i) => v.submit('/signup', { username: `par${i}-${tag}`, email: `par${i}-${tag}@example.test`, password: 'a long enough passphrase' })),
      );
      const statuses = answers.map((a) => a.status).sort();
      // The refused one took the first of the two points.
      expect(statuses).to.deep.equal([302, 429, 429, 429, 429, 429]);
    });

    it('refuses the third account from one address with 429, keeping what was typed', async () => {
      const visitor = new Browser(idp.url, { from: '127.0.0.5' });
      const signUp = (name: string) => fillIn(visitor, '/signup', { username: name, email: `${name}@example.test`, password: 'a long enough passphrase' });
      const tag = randomBytes(3).toString('hex');
      expect((await signUp(`first-${tag}`)).status).to.equal(302);
      await visitor.postForm('/logout', {});
      const fresh = new Browser(idp.url, { from: '127.0.0.5' });
      const second = await fillIn(fresh, '/signup', { username: `second-${tag}`, email: `second-${tag}@example.test`, password: 'a long enough passphrase' });
      expect(second.status).to.equal(302);
      const third = await fillIn(new Browser(idp.url, { from: '127.0.0.5' }), '/signup', { username: `third-${tag}`, email: `third-${tag}@example.test`, password: 'a long enough passphrase' });
      expect(third.status).to.equal(429);
      expect(third.headers.get('retry-after')).to.match(/^\d+$/);
      expect(third.text).to.include('Too many accounts were created from your network');
      expect(third.text).to.include(`third-${tag}`);
      expect(await idp.db('users').where({ username: `third-${tag}` }).first()).to.equal(undefined);
    });
  });

  describe('failed client authentication (the default 10 a minute)', () => {
    const idp = useIdp(profile);

    it('refuses the client_id with 429 JSON and Retry-After after 10 failures, even with the right secret', async () => {
      const app = await makeClient(idp.db);
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
      const app = await makeClient(idp.db);
      for (let i = 0; i < 10; i += 1) {
        await tokenRequest(idp.url, { form: { grant_type: 'refresh_token', refresh_token: 'hr_x', client_id: app.clientId, client_secret: 'hs_wrong' } });
      }
      const refused = await tokenRequest(idp.url, { query: { client_id: app.clientId, client_secret: app.clientSecret, code: 'x', redirect_uri: CALLBACK } });
      expect(refused.status).to.equal(429);
    });
  });

  describe('API requests per token', () => {
    const idp = useIdp(profile, { RATE_LIMIT_API_TOKEN: '3/1h' });

    it("sends GitHub's X-RateLimit-* headers and refuses the request past the limit with 429 JSON", async () => {
      const user = await makeUser(idp.db);
      const { token } = await createAccessToken(idp.db, user.id, { name: 'limits', scopes: ['groups:read-only'] });
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
      const body = (await refused.json()) as { error: string; error_description: string };
      expect(body.error).to.equal('rate_limited');
      // The configured window in words, and the wait the Retry-After header gives.
      expect(body.error_description).to.equal(`Too many requests: at most 3 per 1 hour; retry after ${refused.headers.get('retry-after')} seconds.`);
      const other = await createAccessToken(idp.db, user.id, { name: 'other', scopes: ['groups:read-only'] });
      expect((await fetch(`${idp.url}/apis/v2/user`, { headers: { authorization: `Bearer ${other.token}` } })).status).to.equal(200);
    });
  });

  describe('two instances sharing storage', () => {
    let one: RunningIdp;
    let two: RunningIdp;
    before(async () => {
      // The second instance uses the first one's database and Redis keys, as a deployment's instances do.
      const prefix = `idp-test:${randomBytes(4).toString('hex')}:`;
      one = await startIdp(profile, {}, undefined, prefix);
      two = await startIdp(profile, {}, one.database, prefix);
    });
    after(async () => {
      await two.stop();
      await one.stop();
    });

    it('counts failures made at either instance against the same limit', async () => {
      const user = await makeUser(one.db);
      for (let i = 0; i < 5; i += 1) await attemptSignIn(new Browser(i % 2 ? one.url : two.url), user.username, WRONG);
      expect((await attemptSignIn(new Browser(one.url), user.username, user.password)).status).to.equal(429);
      expect((await attemptSignIn(new Browser(two.url), user.username, user.password)).status).to.equal(429);
    });
  });

  describe('password hashing on sign-in', () => {
    const idp = useIdp(profile);

    it('rehashes an older scrypt hash with Argon2id at the next sign-in', async () => {
      const user = await makeUser(idp.db);
      // The hash the service made before Argon2id, for this password (N = 2^15, r = 8, p = 1).
      const { scryptSync } = await import('node:crypto');
      const salt = randomBytes(16);
      const old = ['scrypt', 2 ** 15, 8, 1, salt.toString('base64url'), scryptSync(user.password, salt, 32, { N: 2 ** 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 }).toString('base64url')].join('$');
      await idp.db('users').where({ id: user.id }).update({ password_hash: old });
      expect((await attemptSignIn(new Browser(idp.url), user.username, user.password)).status).to.equal(302);
      const stored = (await findUserById(idp.db, user.id))!;
      expect(stored.password_hash).to.match(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
      expect(await verifyPassword(user.password, stored.password_hash)).to.equal(true);
    });
  });

  describe('a bounded KDF queue', () => {
    const idp = useIdp(profile, { KDF_CONCURRENCY: '1', KDF_QUEUE: '1', RATE_LIMIT_SIGNIN_IP: 'off', RATE_LIMIT_SIGNIN_ACCOUNT: 'off', RATE_LIMIT_SIGNIN_ACCOUNT_IP: 'off' });

    it('answers sign-ins past the bound at once with 503 and Retry-After, and the others normally', async () => {
      const user = await makeUser(idp.db);
      const answers = await wrongPasswordsAtOnce(idp.url, user.username, 12);
      const busy = answers.filter((a) => a.status === 503);
      expect(busy.length).to.be.at.least(1);
      expect(answers.filter((a) => a.status === 401).length).to.be.at.least(2);
      expect(answers.every((a) => a.status === 401 || a.status === 503)).to.equal(true);
      expect(busy[0]!.headers.get('retry-after')).to.match(/^\d+$/);
      expect(busy[0]!.text).to.include('The server is busy');
    });
  });
});
