import { expect } from 'chai';
import { generateToken } from '../../src/tokens.js';
import { createExampleApp, SESSION_COOKIE, type ExampleSession } from '../../examples/third-party-server/server.js';
import { describeEachProfile, listen, useIdp, type RunningIdp } from '../helpers/app.js';
import { Browser, type Page } from '../helpers/browser.js';
import { makeApp, makeGroup, makeUser, type TestUser } from '../helpers/factories.js';
import { passProvider, withClockAhead } from '../helpers/oauth.js';

/**
 * The example third-party server in-process on a free loopback port, registered at the identity
 * provider as an application of the group (owned by `ownerId`) with the port's callback.
 */
async function startExample(idp: RunningIdp, ownerId: number, groupId: number) {
  const { server, url, close } = await listen();
  const redirectUri = `${url}/callback`;
  const { clientId, clientSecret } = await makeApp(idp.db, ownerId, groupId, { callbackURL: redirectUri, name: 'Example third-party server' });
  const sessions = new Map<string, ExampleSession>();
  server.on('request', (await createExampleApp({ issuer: idp.url, clientId, clientSecret, redirectUri, sessions })).callback());
  return {
    url,
    redirectUri,
    clientId,
    clientSecret,
    /** The example's server-side sessions, by the id in its cookie. */
    sessions,
    /** The session `browser` holds at the example. */
    sessionOf: (browser: Browser) => sessions.get(browser.cookies(url).get(SESSION_COOKIE) ?? ''),
    stop: close,
  };
}

/**
 * The example third-party server (examples/third-party-server) against a real identity provider,
 * both in-process on loopback ports: the rule that no token, or a token the
 * API does not accept, is answered with a 302 to the authorize endpoint and a fresh state.
 */
describeEachProfile('the example third-party server', (profile) => {
  const idp = useIdp(profile);
  let example: Awaited<ReturnType<typeof startExample>>;
  let user: TestUser;

  before(async () => {
    user = await makeUser(idp.db, { name: 'Ada Lovelace' });
    const group = await makeGroup(idp.db, user.id, { name: 'Analytical <Engines> & "Co"', path: 'engines' });
    await makeGroup(idp.db, user.id, { name: 'Difference Engine', path: 'difference' });
    example = await startExample(idp, user.id, group.id);
  });
  after(() => example?.stop());

  /** A browser between the two sites, the identity provider's and the example's. */
  const twoSites = () => new Browser(idp.url, { also: [example.url] });

  /** Signs the person in through the example and returns the browser, now holding a token there. */
  async function signedInBrowser(): Promise<Browser> {
    const browser = twoSites();
    const { status, url } = await passProvider(browser, `${example.url}/`, user);
    expect(status).to.equal(200);
    expect(url.toString()).to.equal(`${example.url}/`);
    expect(example.sessionOf(browser)?.accessToken).to.match(/^ho_/);
    return browser;
  }

  function expectAuthorizeRedirect(res: Page | Response): URL {
    expect(res.status).to.equal(302);
    const location = new URL(res.headers.get('location')!);
    expect(`${location.origin}${location.pathname}`).to.equal(`${idp.url}/login/oauth/authorize`);
    expect(location.searchParams.get('client_id')).to.equal(example.clientId);
    expect(location.searchParams.get('redirect_uri')).to.equal(example.redirectUri);
    expect(location.searchParams.get('state')).to.have.length.of.at.least(32);
    return location;
  }

  function withSession(token: string): RequestInit {
    const id = `test-session-${Math.random().toString(36).slice(2)}`;
    example.sessions.set(id, { accessToken: token });
    return { headers: { cookie: `${SESSION_COOKIE}=${id}` } };
  }

  it('signs the user in through authorize and lists their groups from /apis/v2/groups, escaped', async () => {
    const { status, text: body } = await passProvider(twoSites(), `${example.url}/`, user);
    expect(status).to.equal(200);
    expect(body).to.include('Analytical &#60;Engines&#62; &#38; &#34;Co&#34;').and.not.include('<Engines>');
    expect(body).to.include('Difference Engine').and.include('Ada Lovelace');
    expect(body.match(/data-testid="group"/g)).to.have.length(2);
  });

  it('keeps the token on the server: the cookie holds only a random HttpOnly, SameSite=Lax session id', async () => {
    const res = await fetch(`${example.url}/`, { redirect: 'manual' });
    const cookie = res.headers.getSetCookie().find((c) => c.startsWith(`${SESSION_COOKIE}=`))!;
    expect(cookie).to.match(/; httponly/i).and.match(/; samesite=lax/i);
    expect(cookie).to.match(new RegExp(`^${SESSION_COOKIE}=[A-Za-z0-9_-]{43};`));

    const browser = await signedInBrowser();
    const id = browser.cookies(example.url).get(SESSION_COOKIE)!;
    expect(id).to.not.include('ho_');
    expect(example.sessions.get(id)!.accessToken).to.match(/^ho_/);
  });

  it('answers a request with no token with a 302 to authorize, with a fresh state each time', async () => {
    const first = expectAuthorizeRedirect(await fetch(`${example.url}/`, { redirect: 'manual' }));
    const second = expectAuthorizeRedirect(await fetch(`${example.url}/`, { redirect: 'manual' }));
    expect(first.searchParams.get('state')).to.not.equal(second.searchParams.get('state'));
    expect(first.searchParams.get('code_challenge_method')).to.equal('S256');
  });

  it('answers an unknown token with a 302 to authorize and forgets the token', async () => {
    const init = withSession(generateToken('ho_'));
    expectAuthorizeRedirect(await fetch(`${example.url}/`, { ...init, redirect: 'manual' }));
    const id = new Headers(init.headers).get('cookie')!.split('=')[1]!;
    expect(example.sessions.get(id)!.accessToken).to.equal(undefined);
  });

  it('answers an invalid (malformed) token with a 302 to authorize', async () => {
    expectAuthorizeRedirect(await fetch(`${example.url}/`, { ...withSession('not-a-token'), redirect: 'manual' }));
  });

  it('answers a token revoked at the revocation endpoint with a 302 to authorize', async () => {
    const browser = await signedInBrowser();
    expect((await browser.get(`${example.url}/`)).status).to.equal(200);
    const revoked = await fetch(`${idp.url}/login/oauth/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: example.sessionOf(browser)!.accessToken!, client_id: example.clientId, client_secret: example.clientSecret }),
    });
    expect(revoked.status).to.equal(200);
    expectAuthorizeRedirect(await browser.get(`${example.url}/`));
    expect(example.sessionOf(browser)!.accessToken).to.equal(undefined);
  });

  it('answers an expired token (3601 s later) with a 302 to authorize', async () => {
    const browser = await signedInBrowser();
    expect((await browser.get(`${example.url}/`)).status).to.equal(200);
    expectAuthorizeRedirect(await withClockAhead(3601 * 1000, () => browser.get(`${example.url}/`)));
  });

  it('signs in again after a 302: the person who already consented is not asked again', async () => {
    const browser = await signedInBrowser();
    const first = example.sessionOf(browser)!.accessToken!;
    delete example.sessionOf(browser)!.accessToken;
    const { status, url } = await browser.follow(`${example.url}/`);
    expect(status).to.equal(200);
    expect(url.toString()).to.equal(`${example.url}/`);
    expect(example.sessionOf(browser)!.accessToken).to.match(/^ho_/).and.not.equal(first);
  });

  it('forgets the token on "Forget my token"; the next visit is a 302 to authorize', async () => {
    const browser = await signedInBrowser();
    const id = browser.cookies(example.url).get(SESSION_COOKIE)!;
    expect((await browser.request(`${example.url}/logout`, { method: 'POST' })).status).to.equal(200);
    expect(example.sessions.has(id)).to.equal(false);
    expectAuthorizeRedirect(await browser.get(`${example.url}/`));
  });

  it('refuses a callback whose state does not match with a 400 page', async () => {
    const browser = twoSites();
    const location = expectAuthorizeRedirect(await browser.get(`${example.url}/`));
    const res = await browser.get(`${example.url}/callback?code=anything&state=${location.searchParams.get('state')}x`);
    expect(res.status).to.equal(400);
    expect(res.text).to.include('state');
  });

  it('refuses a callback with no sign-in under way with a 400 page', async () => {
    const res = await fetch(`${example.url}/callback?code=anything&state=anything`);
    expect(res.status).to.equal(400);
  });

  it('shows access_denied with a 403 when the person clicks Cancel', async () => {
    const other = await makeUser(idp.db);
    const { status, url, text } = await passProvider(twoSites(), `${example.url}/`, other, { deny: true });
    expect(url.pathname).to.equal('/callback');
    expect(status).to.equal(403);
    expect(text).to.include('access_denied');
  });
});
