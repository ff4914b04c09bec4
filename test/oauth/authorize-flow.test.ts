import { expect } from 'chai';
import { profiles, type RunningIdp } from '../helpers/app.js';
import { csrfFrom, formAction, UserAgent } from '../helpers/browser-less.js';
import { authorizeUrl, exchangeCode } from '../helpers/oauth.js';
import { authorize, type Client, clock, credentialsOf, discovery, type Fixture, makeFixture, makeOtherClient, signedInFixture, signInOnSite } from './support.js';

/** Sign-in, consent, the redirect and the scope rules: what a well-formed authorize request leads to. */
for (const profile of profiles()) {
  describe(`authorization flow behaviour (${profile})`, () => {
    let server: RunningIdp;
    let fx: Fixture;
    /** Signed in as fx.user once (sign-in is a slow KDF): for the tests where the session does not matter. */
    let agent: UserAgent;

    before(async () => {
      ({ server, fx, agent } = await signedInFixture(profile));
    });
    after(() => server.stop());

    async function codeFor(client: Client, scope?: string): Promise<string> {
      const params = await authorize(agent, client, fx.user, scope ? { scope } : {});
      expect(params.get('code'), params.toString()).to.be.a('string');
      return params.get('code')!;
    }

    async function exchange(client: Client, code: string) {
      return exchangeCode(server.url, { client_id: client.clientId, client_secret: client.clientSecret, code, redirect_uri: client.redirectUri });
    }

    /** An application the fixture's user has never authorized. */
    const newClient = () => makeOtherClient(server.idp.db, fx.user);

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

      it('serves preferred_username and email at the discovery userinfo_endpoint for openid profile email', async () => {
        const code = await codeFor(fx, 'openid profile email');
        const { body } = await exchange(fx, code);
        const { userinfo_endpoint } = await discovery(server.url);
        const res = await fetch(userinfo_endpoint!, { headers: { authorization: `Bearer ${String(body.access_token)}` } });
        expect(res.status).to.equal(200);
        const info = (await res.json()) as Record<string, unknown>;
        expect(info.sub).to.equal(String(fx.user.id));
        expect(info.preferred_username).to.equal(fx.user.username);
        expect(info.email).to.equal(fx.user.email);
      });
    });

    describe('consent', () => {
      it('redirects Cancel on the consent page with access_denied and the state', async () => {
        const client = await newClient();
        const params = await authorize(agent, client, fx.user, { deny: true, state: 'cancel-state' });
        expect(params.get('error')).to.equal('access_denied');
        expect(params.get('state')).to.equal('cancel-state');
        expect(params.has('code')).to.equal(false);
      });

      it('names the application, its group, its homepage and each scope on the consent page', async () => {
        const client = await newClient();
        const res = await agent.follow(authorizeUrl(server.url, { clientId: client.clientId, redirectUri: client.redirectUri, scope: 'groups:read-only email' }));
        expect(res.status).to.equal(200);
        const html = await res.text();
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
        const params = await authorize(agent, client, fx.user, { state: 'ok-state' });
        expect(params.get('code')).to.be.a('string');
        expect(params.get('state')).to.equal('ok-state');
        expect(params.get('iss')).to.equal(server.url);
        // The second time there is no page in between: the authorize response itself is the redirect.
        const res = await agent.get(authorizeUrl(server.url, { clientId: client.clientId, redirectUri: client.redirectUri }));
        expect(res.status).to.equal(302);
      });

      it('skips the consent page on a second authorization for the same app and scopes', async () => {
        const client = await newClient();
        await authorize(agent, client, fx.user);
        const res = await agent.follow(authorizeUrl(server.url, { clientId: client.clientId, redirectUri: client.redirectUri, state: 'again' }));
        expect(res.status).to.equal(302);
        const callback = new URL(res.headers.get('location')!);
        expect(`${callback.origin}${callback.pathname}`).to.equal(client.redirectUri);
        expect(callback.searchParams.get('code')).to.be.a('string');
        expect(callback.searchParams.get('state')).to.equal('again');
      });

      it('skips the consent page when the scope asked for is a subset of the one granted', async () => {
        const client = await newClient();
        await authorize(agent, client, fx.user, { scope: 'groups:read-only email' });
        const res = await agent.follow(authorizeUrl(server.url, { clientId: client.clientId, redirectUri: client.redirectUri, scope: 'email' }));
        expect(res.status).to.equal(302);
        expect(res.headers.get('location')).to.match(/^http:\/\/127\.0\.0\.1:9999\/callback\?code=/);
      });

      it('asks again when a broader scope is requested', async () => {
        const client = await newClient();
        await authorize(agent, client, fx.user);
        const res = await agent.follow(authorizeUrl(server.url, { clientId: client.clientId, redirectUri: client.redirectUri, scope: 'groups:read-only groups:read-write' }));
        expect(res.status).to.equal(200);
        const html = await res.text();
        expect(html).to.include('groups:read-write');
        expect(formAction(html, '/confirm')).to.match(/^\/interaction\//);
      });

      it('skips the consent page in a new browser session once the user signs in again', async () => {
        const client = await newClient();
        await authorize(agent, client, fx.user); // consent given in another session

        const fresh = new UserAgent(server.url);
        const loginPage = await fresh.follow(authorizeUrl(server.url, { clientId: client.clientId, redirectUri: client.redirectUri, state: 'second-session' }));
        expect(loginPage.status).to.equal(200);
        const html = await loginPage.text();
        expect(html).to.include('name="password"');
        const posted = await fresh.postForm(formAction(html, '/login'), { _csrf: csrfFrom(html), ...credentialsOf(fx.user) });
        const res = await fresh.follow(new URL(posted.headers.get('location')!, server.url).toString());
        expect(res.status).to.equal(302);
        const callback = new URL(res.headers.get('location')!);
        expect(`${callback.origin}${callback.pathname}`).to.equal(client.redirectUri);
        expect(callback.searchParams.get('code')).to.be.a('string');
        expect(callback.searchParams.get('state')).to.equal('second-session');
      });

      it('asks another user of the same browser for consent of their own', async () => {
        const client = await newClient();
        const browser = new UserAgent(server.url);
        await authorize(browser, client, fx.user);
        const other = await makeFixture(server.idp.db);
        const page = await browser.get('/groups');
        await browser.postForm('/logout', { _csrf: csrfFrom(await page.text()) });
        await signInOnSite(browser, other.user);
        const res = await browser.follow(authorizeUrl(server.url, { clientId: client.clientId, redirectUri: client.redirectUri }));
        expect(res.status).to.equal(200);
        expect(await res.text()).to.include('/confirm');
      });
    });

    describe('the site session and the flow share the sign-in', () => {
      it('does not show the password page to a user signed in on the site', async () => {
        const browser = new UserAgent(server.url);
        const signedIn = await signInOnSite(browser, fx.user);
        expect(signedIn.status).to.equal(302);
        const client = await newClient();
        const res = await browser.follow(authorizeUrl(server.url, { clientId: client.clientId, redirectUri: client.redirectUri }));
        expect(res.status).to.equal(200);
        const html = await res.text();
        expect(html).not.to.include('name="password"');
        expect(formAction(html, '/confirm')).to.match(/^\/interaction\//);
      });

      it('serves GET /groups without asking to sign in after signing in inside the flow', async () => {
        const browser = new UserAgent(server.url);
        await authorize(browser, await newClient(), fx.user);
        const res = await browser.get('/groups');
        expect(res.status).to.equal(200);
        const html = await res.text();
        expect(html).not.to.include('name="password"');
        expect(html).to.include(fx.groupName);
      });
    });

    describe('code lifetime', () => {
      afterEach(() => clock.restore());

      /**
       * A code issued at a whole second (so the library's second-granularity timestamps do not
       * shorten its life), presented `seconds` later.
       */
      async function exchangeAfter(seconds: number) {
        const client = await newClient();
        await authorize(agent, client, fx.user); // consent first, so the next authorize is one request
        const toNextSecond = 1000 - (Date.now() % 1000);
        clock.advance(toNextSecond / 1000);
        const code = (await authorize(agent, client, fx.user)).get('code')!;
        clock.advance(toNextSecond / 1000 + seconds);
        return exchange(client, code);
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
}
