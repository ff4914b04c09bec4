import { expect } from 'chai';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { Browser, signIn } from '../helpers/browser.js';
import { setEmailVerified } from '../helpers/email-verification.js';
import { makeClient, type Client } from '../helpers/factories.js';
import { formAction } from '../helpers/html.js';
import { authorize, authorizeUrl, discovery, tokenRequest, withClockAhead } from '../helpers/oauth.js';

/** Sign-in, consent, the redirect and the scope rules: what a well-formed authorize request leads to. */
describeEachProfile('authorization flow behaviour', (profile) => {
  const server = useIdp(profile);
  let fx: Client;
  /** Signed in as fx.user once (sign-in is a slow KDF): for the tests where the session does not matter. */
  let browser: Browser;

  before(async () => {
    fx = await makeClient(server.db);
    browser = await signIn(server.url, fx.user);
  });

  async function codeFor(client: Client, scope?: string): Promise<string> {
    const params = (await authorize(browser, { ...client, scope }, fx.user)).searchParams;
    expect(params.get('code'), params.toString()).to.be.a('string');
    return params.get('code')!;
  }

  async function exchange(client: Client, code: string) {
    return tokenRequest(server.url, { query: { client_id: client.clientId, client_secret: client.clientSecret, code, redirect_uri: client.redirectUri } });
  }

  /** An application the fixture's user has never authorized. */
  const newClient = () => makeClient(server.db, { user: fx.user, name: 'Other App' });

  describe('scopes', () => {
    it('grants groups:read-only when no scope is requested', async () => {
      const { status, body } = await exchange(fx, await codeFor(fx));
      expect(status, JSON.stringify(body)).to.equal(200);
      expect(body.scope).to.equal('groups:read-only');
    });

    it('drops unknown scopes and grants the known ones', async () => {
      const code = await codeFor(fx, 'groups:read-only frobnicate');
      const { status, body } = await exchange(fx, code);
      expect(status, JSON.stringify(body)).to.equal(200);
      expect(body.scope).to.equal('groups:read-only');
    });

    it('returns an id_token for openid profile email', async () => {
      const code = await codeFor(fx, 'openid profile email');
      const { status, body } = await exchange(fx, code);
      expect(status, JSON.stringify(body)).to.equal(200);
      expect(String(body.scope).split(' ')).to.have.members(['openid', 'profile', 'email']);
      expect(body.id_token).to.be.a('string').and.match(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    });

    it('serves preferred_username and a verified email at the discovery userinfo_endpoint for openid profile email', async () => {
      await setEmailVerified(server.db, fx.user, true);
      const code = await codeFor(fx, 'openid profile email');
      const { body } = await exchange(fx, code);
      const { userinfo_endpoint } = await discovery(server.url);
      const res = await fetch(userinfo_endpoint!, { headers: { authorization: `Bearer ${String(body.access_token)}` } });
      expect(res.status).to.equal(200);
      const info = (await res.json()) as Record<string, unknown>;
      expect(info.sub).to.equal(String(fx.user.id));
      expect(info.preferred_username).to.equal(fx.user.username);
      expect(info.email).to.equal(fx.user.email);
      expect(info.email_verified).to.equal(true);
    });
  });

  describe('consent', () => {
    it('redirects Cancel on the consent page with access_denied and the state', async () => {
      const client = await newClient();
      const params = (await authorize(browser, { ...client, deny: true, state: 'cancel-state' }, fx.user)).searchParams;
      expect(params.get('error')).to.equal('access_denied');
      expect(params.get('state')).to.equal('cancel-state');
      expect(params.has('code')).to.equal(false);
    });

    it('names the application, its group, its homepage and each scope on the consent page', async () => {
      const client = await newClient();
      const res = await browser.follow(authorizeUrl(server.url, { clientId: client.clientId, redirectUri: client.redirectUri, scope: 'groups:read-only email' }));
      expect(res.status).to.equal(200);
      const html = res.text;
      expect(html).to.include('Other App');
      expect(html).to.include('https://app.example.test');
      expect(html).to.match(/data-testid="app-group">Group /);
      expect(html).to.include('groups:read-only');
      expect(html).to.include('email');
      expect(html).to.match(/>\s*Authorize\s*</);
      expect(html).to.match(/>\s*Cancel\s*</);
    });

    it('redirects with code, state and iss (302) once the user authorizes', async () => {
      const client = await newClient();
      const params = (await authorize(browser, { ...client, state: 'ok-state' }, fx.user)).searchParams;
      expect(params.get('code')).to.be.a('string');
      expect(params.get('state')).to.equal('ok-state');
      expect(params.get('iss')).to.equal(server.url);
      // The second time there is no page in between: the authorize response itself is the redirect.
      const res = await browser.get(authorizeUrl(server.url, { clientId: client.clientId, redirectUri: client.redirectUri }));
      expect(res.status).to.equal(302);
    });

    it('skips the consent page on a second authorization for the same app and scopes', async () => {
      const client = await newClient();
      await authorize(browser, client, fx.user);
      const res = await browser.follow(authorizeUrl(server.url, { clientId: client.clientId, redirectUri: client.redirectUri, state: 'again' }));
      expect(res.status).to.equal(302);
      const callback = new URL(res.headers.get('location')!);
      expect(`${callback.origin}${callback.pathname}`).to.equal(client.redirectUri);
      expect(callback.searchParams.get('code')).to.be.a('string');
      expect(callback.searchParams.get('state')).to.equal('again');
    });

    it('skips the consent page when the scope asked for is a subset of the one granted', async () => {
      const client = await newClient();
      await authorize(browser, { ...client, scope: 'groups:read-only email' }, fx.user);
      const res = await browser.follow(authorizeUrl(server.url, { clientId: client.clientId, redirectUri: client.redirectUri, scope: 'email' }));
      expect(res.status).to.equal(302);
      expect(res.headers.get('location')).to.match(/^http:\/\/127\.0\.0\.1:9999\/callback\?code=/);
    });

    it('asks again when a broader scope is requested', async () => {
      const client = await newClient();
      await authorize(browser, client, fx.user);
      const res = await browser.follow(authorizeUrl(server.url, { clientId: client.clientId, redirectUri: client.redirectUri, scope: 'groups:read-only groups:read-write' }));
      expect(res.status).to.equal(200);
      const html = res.text;
      expect(html).to.include('groups:read-write');
      expect(formAction(html, '/confirm')).to.match(/^\/interaction\//);
    });

    it('skips the consent page in a new browser session once the user signs in again', async () => {
      const client = await newClient();
      await authorize(browser, client, fx.user); // consent given in another session

      const fresh = new Browser(server.url);
      const loginPage = await fresh.follow(authorizeUrl(server.url, { clientId: client.clientId, redirectUri: client.redirectUri, state: 'second-session' }));
      expect(loginPage.status).to.equal(200);
      const html = loginPage.text;
      expect(html).to.include('name="password"');
      const res = await fresh.follow(await fresh.submit(formAction(html, '/login'), { login: fx.user.username, password: fx.user.password }));
      expect(res.status).to.equal(302);
      const callback = new URL(res.headers.get('location')!);
      expect(`${callback.origin}${callback.pathname}`).to.equal(client.redirectUri);
      expect(callback.searchParams.get('code')).to.be.a('string');
      expect(callback.searchParams.get('state')).to.equal('second-session');
    });

    it('asks another user of the same browser for consent of their own', async () => {
      const client = await newClient();
      const shared = new Browser(server.url);
      await authorize(shared, client, fx.user);
      const other = await makeClient(server.db);
      await shared.get('/groups').expect(200);
      await shared.submit('/logout');
      await signIn(shared, other.user);
      const res = await shared.follow(authorizeUrl(server.url, { clientId: client.clientId, redirectUri: client.redirectUri }));
      expect(res.status).to.equal(200);
      expect(res.text).to.include('/confirm');
    });
  });

  describe('the site session and the flow share the sign-in', () => {
    it('does not show the password page to a user signed in on the site', async () => {
      const signedIn = await signIn(server.url, fx.user);
      const client = await newClient();
      const res = await signedIn.follow(authorizeUrl(server.url, { clientId: client.clientId, redirectUri: client.redirectUri }));
      expect(res.status).to.equal(200);
      const html = res.text;
      expect(html).not.to.include('name="password"');
      expect(formAction(html, '/confirm')).to.match(/^\/interaction\//);
    });

    it('serves GET /groups without asking to sign in after signing in inside the flow', async () => {
      const fresh = new Browser(server.url);
      await authorize(fresh, await newClient(), fx.user);
      const res = await fresh.get('/groups');
      expect(res.status).to.equal(200);
      const html = res.text;
      expect(html).not.to.include('name="password"');
      expect(html).to.include(fx.group.name);
    });
  });

  describe('code lifetime', () => {
    /**
     * A code issued at a whole second (so the library's second-granularity timestamps do not
     * shorten its life), presented `seconds` later.
     */
    async function exchangeAfter(seconds: number) {
      const client = await newClient();
      await authorize(browser, client, fx.user); // consent first, so the next authorize is one request
      const toNextSecond = 1000 - (Date.now() % 1000);
      const code = await withClockAhead(toNextSecond, async () => (await authorize(browser, client, fx.user)).searchParams.get('code')!);
      return withClockAhead(toNextSecond + seconds * 1000, () => exchange(client, code));
    }

    it('rejects a code presented 601 s after issue with invalid_grant', async () => {
      const { status, body } = await exchangeAfter(601);
      expect(status).to.equal(400);
      expect(body.error).to.equal('invalid_grant');
    });

    it('accepts a code presented 599 s after issue', async () => {
      const { status, body } = await exchangeAfter(599);
      expect(status, JSON.stringify(body)).to.equal(200);
      expect(body.access_token).to.match(/^ho_/);
    });
  });
});
