import { expect } from 'chai';
import http from 'node:http';
import { profiles, startIdp, type RunningIdp } from '../helpers/app.js';
import { csrfFrom, UserAgent } from '../helpers/browser-less.js';
import { makeApp, makeGroup, makeUser } from '../helpers/factories.js';
import { authorizeUrl } from '../helpers/oauth.js';
import { signIn } from '../api/support.js';

async function csrfOfPage(agent: UserAgent, path: string): Promise<string> {
  const res = await agent.get(path);
  expect(res.status, path).to.equal(200);
  return csrfFrom(await res.text());
}

/** Creates a personal access token through the form: 200 when accepted. */
function createToken(agent: UserAgent, csrf: string): Promise<Response> {
  return agent.postForm('/account/settings/tokens', { _csrf: csrf, name: 'csrf test', scopes: 'groups:read-only', expiration: '7' });
}

for (const profile of profiles()) {
  describe(`CSRF tokens bound to the session (${profile})`, () => {
    let server: RunningIdp;
    before(async () => {
      server = await startIdp(profile);
    });
    after(() => server.stop());

    it('accepts the token of this session from any of its pages', async () => {
      const agent = await signIn(server, await makeUser(server.idp.db));
      const res = await createToken(agent, await csrfOfPage(agent, '/groups'));
      expect(res.status).to.equal(200);
    });

    it('refuses a token of another signed-in session with 403 and changes nothing', async () => {
      const alice = await signIn(server, await makeUser(server.idp.db));
      const bob = await makeUser(server.idp.db);
      const bobAgent = await signIn(server, bob);
      const res = await createToken(bobAgent, await csrfOfPage(alice, '/groups'));
      expect(res.status).to.equal(403);
      expect(await server.idp.db('personal_access_tokens').where({ user_id: bob.id })).to.have.length(0);
    });

    it('refuses a token of another session of the same user', async () => {
      const user = await makeUser(server.idp.db);
      const first = await signIn(server, user);
      const second = await signIn(server, user);
      expect((await createToken(second, await csrfOfPage(first, '/groups'))).status).to.equal(403);
    });

    it('refuses, after sign-in, the token this browser had before it signed in', async () => {
      const user = await makeUser(server.idp.db);
      const agent = new UserAgent(server.url);
      const before = await csrfOfPage(agent, '/login');
      expect((await agent.postForm('/login', { _csrf: before, login: user.username, password: user.password })).status).to.equal(302);
      expect((await createToken(agent, before)).status).to.equal(403);
    });

    it('refuses a signed-out browser\'s token in another signed-out browser', async () => {
      const user = await makeUser(server.idp.db);
      const theirs = await csrfOfPage(new UserAgent(server.url), '/login');
      const mine = new UserAgent(server.url);
      await mine.get('/login');
      const res = await mine.postForm('/login', { _csrf: theirs, login: user.username, password: user.password });
      expect(res.status).to.equal(403);
    });
  });
}

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A request to an https-ISSUER server over the plain-http hop a TLS-terminating proxy would use. */
function viaProxy(server: RunningIdp, path: string, options: { method?: string; cookie?: string; form?: Record<string, string> } = {}): Promise<Answer> {
  const { port } = server.server.address() as { port: number };
  const body = options.form ? new URLSearchParams(options.form).toString() : undefined;
  const headers: Record<string, string> = { host: 'idp.example' };
  if (options.cookie) headers.cookie = options.cookie;
  if (body) headers['content-type'] = 'application/x-www-form-urlencoded';
  return new Promise((resolve, reject) => {
    const req = http.request(`http://127.0.0.1:${port}${path}`, { method: options.method ?? 'GET', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** `name=value` pairs of Set-Cookie lines that set (not clear) a cookie. */
function cookiePairs(lines: string[]): string {
  return lines.filter((line) => !/expires=Thu, 01 Jan 1970/i.test(line)).map((line) => line.split(';')[0]).join('; ');
}

for (const profile of profiles()) {
  describe(`cookie names under an https ISSUER (${profile})`, () => {
    let server: RunningIdp;
    let user: Awaited<ReturnType<typeof makeUser>>;
    let app: Awaited<ReturnType<typeof makeApp>>;

    before(async () => {
      server = await startIdp(profile, { ISSUER: 'https://idp.example' });
      user = await makeUser(server.idp.db);
      const group = await makeGroup(server.idp.db, user.id);
      app = await makeApp(server.idp.db, user.id, group.id);
    });
    after(() => server.stop());

    function expectHostPrefixed(lines: string[], name: string): void {
      const line = lines.find((l) => l.startsWith(`${name}=`));
      expect(line, `${name} in ${lines.join(' | ')}`).to.be.a('string');
      expect(line).to.match(/; path=\/(;|$)/i).and.match(/; secure/i).and.match(/; httponly/i).and.not.match(/; domain=/i);
    }

    it('names the CSRF cookie __Host-idp_csrf, Secure, at /, without Domain', async () => {
      const res = await viaProxy(server, '/login');
      expectHostPrefixed(res.headers['set-cookie'] ?? [], '__Host-idp_csrf');
    });

    it('names the session cookie and its signature __Host-idp_session, Secure, at /, without Domain', async () => {
      const page = await viaProxy(server, '/login');
      const cookie = cookiePairs(page.headers['set-cookie'] ?? []);
      const res = await viaProxy(server, '/login', { method: 'POST', cookie, form: { _csrf: csrfFrom(page.body), login: user.username, password: user.password } });
      expect(res.status).to.equal(302);
      const lines = res.headers['set-cookie'] ?? [];
      expectHostPrefixed(lines, '__Host-idp_session');
      expectHostPrefixed(lines, '__Host-idp_session.sig');
    });

    it('names the interaction cookies of a flow with the __Secure- prefix, Secure', async () => {
      const url = new URL(authorizeUrl('https://idp.example', { clientId: app.clientId, redirectUri: 'http://127.0.0.1:9999/callback' }));
      const res = await viaProxy(server, `${url.pathname}${url.search}`);
      expect(res.status).to.equal(302);
      const lines = res.headers['set-cookie'] ?? [];
      for (const name of ['__Secure-idp_interaction', '__Secure-idp_interaction_resume']) {
        const line = lines.find((l) => l.startsWith(`${name}=`));
        expect(line, name).to.match(/; secure/i);
      }
    });

    it('signs in with the prefixed cookies and then serves the signed-in pages', async () => {
      const page = await viaProxy(server, '/login');
      let cookie = cookiePairs(page.headers['set-cookie'] ?? []);
      const signedIn = await viaProxy(server, '/login', { method: 'POST', cookie, form: { _csrf: csrfFrom(page.body), login: user.username, password: user.password } });
      cookie = `${cookie}; ${cookiePairs(signedIn.headers['set-cookie'] ?? [])}`;
      const groups = await viaProxy(server, '/groups', { cookie });
      expect(groups.status).to.equal(200);
      expect(groups.body).to.include(user.username);
    });
  });
}
