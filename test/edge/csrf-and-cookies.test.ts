import { expect } from 'chai';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { Browser, signIn, type Page } from '../helpers/browser.js';
import { makeClient, makeUser, type Client, type TestUser } from '../helpers/factories.js';
import { csrfFrom } from '../helpers/html.js';
import { authorizeUrl } from '../helpers/oauth.js';

async function csrfOfPage(browser: Browser, path: string): Promise<string> {
  return csrfFrom((await browser.get(path).expect(200)).text);
}

/** Creates a personal access token through the form: a redirect to the tokens page when accepted. */
function createToken(browser: Browser, csrf: string): Promise<Page> {
  return browser.postForm('/account/settings/tokens', { _csrf: csrf, name: 'csrf test', scopes: 'groups:read-only', expiration: '7' });
}

describeEachProfile('CSRF tokens bound to the session', (profile) => {
  const server = useIdp(profile);

  it('accepts the token of this session from any of its pages', async () => {
    const browser = await signIn(server.url, await makeUser(server.db));
    const res = await createToken(browser, await csrfOfPage(browser, '/groups'));
    expect(res.status).to.equal(302);
  });

  it('refuses a token of another signed-in session with 403 and changes nothing', async () => {
    const alice = await signIn(server.url, await makeUser(server.db));
    const bob = await makeUser(server.db);
    const bobAgent = await signIn(server.url, bob);
    const res = await createToken(bobAgent, await csrfOfPage(alice, '/groups'));
    expect(res.status).to.equal(403);
    expect(await server.db('personal_access_tokens').where({ user_id: bob.id })).to.have.length(0);
  });

  it('refuses a token of another session of the same user', async () => {
    const user = await makeUser(server.db);
    const first = await signIn(server.url, user);
    const second = await signIn(server.url, user);
    expect((await createToken(second, await csrfOfPage(first, '/groups'))).status).to.equal(403);
  });

  it('refuses, after sign-in, the token this browser had before it signed in', async () => {
    const user = await makeUser(server.db);
    const browser = new Browser(server.url);
    const before = await csrfOfPage(browser, '/login');
    expect((await browser.postForm('/login', { _csrf: before, login: user.username, password: user.password })).status).to.equal(302);
    expect((await createToken(browser, before)).status).to.equal(403);
  });

  it('refuses a signed-out browser\'s token in another signed-out browser', async () => {
    const user = await makeUser(server.db);
    const theirs = await csrfOfPage(new Browser(server.url), '/login');
    const mine = new Browser(server.url);
    await mine.get('/login');
    const res = await mine.postForm('/login', { _csrf: theirs, login: user.username, password: user.password });
    expect(res.status).to.equal(403);
  });
});

/**
 * A request of `browser` (of the server's own address) to an https-ISSUER server, over the
 * plain-http hop a TLS-terminating proxy would use: it names the issuer's host. `form` is posted.
 */
function viaProxy(browser: Browser, path: string, form?: Record<string, string>): Promise<Page> {
  const host = { host: 'idp.example' };
  if (!form) return browser.request(path, { headers: host });
  return browser.request(path, { method: 'POST', headers: { ...host, 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(form).toString() });
}

describeEachProfile('cookie names under an https ISSUER', (profile) => {
  const server = useIdp(profile, { ISSUER: 'https://idp.example' });
  let user: TestUser;
  let app: Client;

  before(async () => {
    app = await makeClient(server.db);
    user = app.user;
  });

  function expectHostPrefixed(lines: string[], name: string): void {
    const line = lines.find((l) => l.startsWith(`${name}=`));
    expect(line, `${name} in ${lines.join(' | ')}`).to.be.a('string');
    expect(line).to.match(/; path=\/(;|$)/i).and.match(/; secure/i).and.match(/; httponly/i).and.not.match(/; domain=/i);
  }

  it('names the CSRF cookie __Host-idp_csrf, Secure, at /, without Domain', async () => {
    const res = await viaProxy(new Browser(server.local), '/login');
    expectHostPrefixed(res.headers.getSetCookie(), '__Host-idp_csrf');
  });

  it('names the session cookie and its signature __Host-idp_session, Secure, at /, without Domain', async () => {
    const browser = new Browser(server.local);
    const page = await viaProxy(browser, '/login');
    const res = await viaProxy(browser, '/login', { _csrf: csrfFrom(page.text), login: user.username, password: user.password });
    expect(res.status).to.equal(302);
    const lines = res.headers.getSetCookie();
    expectHostPrefixed(lines, '__Host-idp_session');
    expectHostPrefixed(lines, '__Host-idp_session.sig');
  });

  it('names the interaction cookies of a flow with the __Secure- prefix, Secure', async () => {
    const url = new URL(authorizeUrl('https://idp.example', app));
    const res = await viaProxy(new Browser(server.local), `${url.pathname}${url.search}`);
    expect(res.status).to.equal(302);
    const lines = res.headers.getSetCookie();
    for (const name of ['__Secure-idp_interaction', '__Secure-idp_interaction_resume']) {
      const line = lines.find((l) => l.startsWith(`${name}=`));
      expect(line, name).to.match(/; secure/i);
    }
  });

  it('signs in with the prefixed cookies and then serves the signed-in pages', async () => {
    const browser = new Browser(server.local);
    const page = await viaProxy(browser, '/login');
    await viaProxy(browser, '/login', { _csrf: csrfFrom(page.text), login: user.username, password: user.password });
    const groups = await viaProxy(browser, '/groups');
    expect(groups.status).to.equal(200);
    expect(groups.text).to.include(user.username);
  });
});
