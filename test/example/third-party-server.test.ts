import { expect } from 'chai';
import { generateToken } from '../../src/tokens.js';
import { SESSION_COOKIE } from '../../examples/third-party-server/server.js';
import { profiles, startIdp, type RunningIdp } from '../helpers/app.js';
import { makeGroup, makeUser } from '../helpers/factories.js';
import { signInAndAuthorize, startExample, TwoSiteBrowser, type RunningExample } from '../helpers/two-sites.js';

/**
 * The example third-party server (examples/third-party-server) against a real identity provider,
 * both in-process on loopback ports: the rule that no token, or a token the
 * API does not accept, is answered with a 302 to the authorize endpoint and a fresh state.
 */
for (const profile of profiles()) {
  describe(`the example third-party server (${profile})`, () => {
    let idp: RunningIdp;
    let example: RunningExample;
    let user: Awaited<ReturnType<typeof makeUser>>;

    before(async () => {
      idp = await startIdp(profile);
      user = await makeUser(idp.idp.db, { name: 'Ada Lovelace' });
      const group = await makeGroup(idp.idp.db, user.id, { name: 'Analytical <Engines> & "Co"', path: 'engines' });
      await makeGroup(idp.idp.db, user.id, { name: 'Difference Engine', path: 'difference' });
      example = await startExample(idp, user.id, group.id);
    });
    after(async () => {
      await example?.stop();
      await idp?.stop();
    });

    /** Signs the person in through the example and returns the browser, now holding a token there. */
    async function signedInBrowser(): Promise<TwoSiteBrowser> {
      const browser = new TwoSiteBrowser();
      const { res, url } = await signInAndAuthorize(browser, idp.url, `${example.url}/`, { login: user.username, password: user.password });
      expect(res.status).to.equal(200);
      expect(url.toString()).to.equal(`${example.url}/`);
      expect(example.sessionOf(browser)?.accessToken).to.match(/^ho_/);
      return browser;
    }

    function expectAuthorizeRedirect(res: Response): URL {
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
      const browser = new TwoSiteBrowser();
      const { res, body } = await signInAndAuthorize(browser, idp.url, `${example.url}/`, { login: user.username, password: user.password });
      expect(res.status).to.equal(200);
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
      const id = browser.cookie(example.url, SESSION_COOKIE)!;
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
      expect((await browser.request(`${example.url}/`)).status).to.equal(200);
      const revoked = await fetch(`${idp.url}/login/oauth/revoke`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token: example.sessionOf(browser)!.accessToken!, client_id: example.clientId, client_secret: example.clientSecret }),
      });
      expect(revoked.status).to.equal(200);
      expectAuthorizeRedirect(await browser.request(`${example.url}/`));
      expect(example.sessionOf(browser)!.accessToken).to.equal(undefined);
    });

    it('answers an expired token (3601 s later) with a 302 to authorize', async () => {
      const browser = await signedInBrowser();
      expect((await browser.request(`${example.url}/`)).status).to.equal(200);
      const realNow = Date.now;
      Date.now = () => realNow() + 3601 * 1000;
      try {
        expectAuthorizeRedirect(await browser.request(`${example.url}/`));
      } finally {
        Date.now = realNow;
      }
    });

    it('signs in again after a 302: the person who already consented is not asked again', async () => {
      const browser = await signedInBrowser();
      const first = example.sessionOf(browser)!.accessToken!;
      delete example.sessionOf(browser)!.accessToken;
      const { res, url } = await browser.follow(`${example.url}/`);
      expect(res.status).to.equal(200);
      expect(url.toString()).to.equal(`${example.url}/`);
      expect(example.sessionOf(browser)!.accessToken).to.match(/^ho_/).and.not.equal(first);
    });

    it('forgets the token on "Forget my token"; the next visit is a 302 to authorize', async () => {
      const browser = await signedInBrowser();
      const id = browser.cookie(example.url, SESSION_COOKIE)!;
      expect((await browser.request(`${example.url}/logout`, { method: 'POST' })).status).to.equal(200);
      expect(example.sessions.has(id)).to.equal(false);
      expectAuthorizeRedirect(await browser.request(`${example.url}/`));
    });

    it('refuses a callback whose state does not match with a 400 page', async () => {
      const browser = new TwoSiteBrowser();
      const location = expectAuthorizeRedirect(await browser.request(`${example.url}/`));
      const res = await browser.request(`${example.url}/callback?code=anything&state=${location.searchParams.get('state')}x`);
      expect(res.status).to.equal(400);
      expect(await res.text()).to.include('state');
    });

    it('refuses a callback with no sign-in under way with a 400 page', async () => {
      const res = await fetch(`${example.url}/callback?code=anything&state=anything`);
      expect(res.status).to.equal(400);
    });

    it('shows access_denied with a 403 when the person clicks Cancel', async () => {
      const other = await makeUser(idp.idp.db);
      const { res, url, body } = await signInAndAuthorize(new TwoSiteBrowser(), idp.url, `${example.url}/`, {
        login: other.username,
        password: other.password,
        deny: true,
      });
      expect(url.pathname).to.equal('/callback');
      expect(res.status).to.equal(403);
      expect(body).to.include('access_denied');
    });
  });
}
