import { expect } from 'chai';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { Browser, signIn, type Page } from '../helpers/browser.js';
import { call } from '../helpers/api.js';
import { CALLBACK, makeApp, makeClient, makeGroup, makeUser, PASSWORD, type Client } from '../helpers/factories.js';
import { errorMessage, filled, formAction, formOf, unescapeHtml } from '../helpers/html.js';
import { authorizeUrl, basicAuth, callbackOf, tokenRequest, withClockAhead } from '../helpers/oauth.js';
import { linkIn, useMailServer } from '../helpers/smtp.js';

/** The href of the last link whose text is `text` (the page's own, after the header's), unescaped. */
function hrefOf(html: string, text: string): string {
  const found = [...html.matchAll(new RegExp(`<a[^>]*href="([^"]*)"[^>]*>${text}</a>`, 'g'))].at(-1)?.[1];
  if (found === undefined) throw new Error(`no link "${text}" on the page`);
  return unescapeHtml(found);
}

/** The hidden return_to field of the page's form, or undefined. */
function hiddenReturnTo(html: string): string | undefined {
  const found = /name="return_to" value="([^"]*)"/.exec(html)?.[1];
  return found === undefined ? undefined : unescapeHtml(found);
}

/** Where a redirect points, as a same-site path (or the whole URL for another origin). */
function locationOf(page: Page): string {
  return page.headers.get('location') ?? '';
}

describeEachProfile('Pages: the authorization flow keeps its place', function (profile) {
  this.timeout(30_000);

  const smtp = useMailServer();
  const idp = useIdp(profile, () => ({ SMTP_URL: smtp.url }));
  let client: Client;

  before(async () => {
    client = await makeClient(idp.db, { name: 'Build Monitor' });
  });

  /** A new browser at the flow's sign-in page; returns it, the page and the authorize URL as a path. */
  async function flowSignInPage(scope = 'groups:read-only') {
    const browser = new Browser(idp.url);
    const start = authorizeUrl(idp.url, { ...client, scope, state: 'st-1' });
    const page = await browser.follow(start).expect(200);
    expect(page.url.pathname).to.match(/^\/interaction\//);
    return { browser, page, start };
  }

  it("names the application and its group on the flow's sign-in page, and links sign-up and reset back to the flow", async () => {
    const { page } = await flowSignInPage();
    expect(page.text).to.include('Build Monitor').and.to.include(client.group.name);
    const signup = new URL(hrefOf(page.text, 'Create an account'), idp.url);
    const forgot = new URL(hrefOf(page.text, 'Forgot password\\?'), idp.url);
    expect(signup.pathname).to.equal('/signup');
    expect(forgot.pathname).to.equal('/forgot-password');
    const back = signup.searchParams.get('return_to')!;
    expect(back).to.match(/^\/login\/oauth\/authorize\?/);
    expect(new URL(back, idp.url).searchParams.get('client_id')).to.equal(client.clientId);
    expect(forgot.searchParams.get('return_to')).to.equal(back);
  });

  it('signs up from the flow and, once the mailed link is followed, continues to its consent, then to the callback', async () => {
    const { browser, page } = await flowSignInPage();
    const signupPage = await browser.get(hrefOf(page.text, 'Create an account')).expect(200);
    const back = hiddenReturnTo(signupPage.text)!;
    const username = `new-${Date.now().toString(36)}`;
    const signupForm = formOf(signupPage.text, '/signup');
    const requested = await browser.postForm(signupForm.action, filled(signupForm, { username, email: `${username}@example.test`, name: 'New Person', password: PASSWORD })).expect(302);
    expect(locationOf(requested)).to.equal(`/signup/sent?return_to=${encodeURIComponent(back)}`);
    const sent = await browser.follow(requested).expect(200);
    expect(hrefOf(sent.text, 'Sign in')).to.equal(back);

    // The mailed link carries the flow, and finishing the sign-up there leads back into it.
    const link = linkIn(await smtp.next(`${username}@example.test`), idp.url);
    expect(link.searchParams.get('return_to')).to.equal(back);
    const confirmPage = await browser.get(link).expect(200);
    const confirmForm = formOf(confirmPage.text, '/signup/confirm');
    const created = await browser.postForm(confirmForm.action, filled(confirmForm, { password: PASSWORD })).expect(302);
    expect(locationOf(created)).to.equal(back);
    const consent = await browser.follow(created).expect(200);
    expect(consent.url.pathname).to.match(/^\/interaction\//);
    expect(consent.text).to.include('Authorize <span data-testid="app-name">Build Monitor</span>');
    const done = await browser.follow(await browser.submit(formAction(consent.text, '/confirm')), CALLBACK);
    const callback = callbackOf(done, CALLBACK);
    expect(callback.searchParams.get('state')).to.equal('st-1');
  });

  it('a reset asked for in the flow mails a link that ends back at the flow, which starts again', async () => {
    const user = await makeUser(idp.db);
    const { browser, page } = await flowSignInPage();
    const forgotPage = await browser.get(hrefOf(page.text, 'Forgot password\\?')).expect(200);
    const back = hiddenReturnTo(forgotPage.text)!;
    expect(back).to.match(/^\/login\/oauth\/authorize\?/);
    await browser.submit('/forgot-password', { email: user.email, return_to: back }).expect(302, `/forgot-password/sent?return_to=${encodeURIComponent(back)}`);

    const link = linkIn(await smtp.next(user.email), idp.url);
    expect(link.searchParams.get('return_to')).to.equal(back);
    const resetPage = await browser.get(link).expect(200);
    expect(hiddenReturnTo(resetPage.text)).to.equal(back);
    const token = link.searchParams.get('token')!;
    const set = await browser.submit('/reset-password', { token, password: 'a brand new passphrase', password_confirmation: 'a brand new passphrase', return_to: back }).expect(302);
    const done = await browser.follow(set).expect(200);
    expect(hrefOf(done.text, 'Sign in')).to.equal(back);

    // The flow's interaction may have expired meanwhile: the start makes a new one.
    const again = await browser.follow(back).expect(200);
    expect(again.url.pathname).to.match(/^\/interaction\//);
    expect(again.text).to.include('Build Monitor');
    const signedIn = await browser.submit(formAction(again.text, '/login'), { login: user.username, password: 'a brand new passphrase' });
    const consent = await browser.follow(signedIn).expect(200);
    expect(consent.text).to.include('data-testid="sent-to"');
  });

  for (const target of ['//evil.example', '/\\evil.example', 'https://evil.example', '/\t/evil.example', 'javascript:alert(1)', '//evil.example/login/oauth/authorize']) {
    it(`refuses ${JSON.stringify(target)} as a return target (no open redirect)`, async () => {
      const browser = new Browser(idp.url);
      const signupPage = await browser.get(`/signup?return_to=${encodeURIComponent(target)}`);
      // A control character is refused at the edge; any other bad target is simply not kept.
      if (signupPage.status === 200) expect(hiddenReturnTo(signupPage.text)).to.equal(undefined);
      else expect(signupPage.status).to.equal(400);
      await browser.get('/signup').expect(200);
      const username = `r-${Math.random().toString(36).slice(2, 10)}`;
      const created = await browser.submit('/signup', { username, email: `${username}@example.test`, password: PASSWORD, return_to: target });
      if (created.status === 302) expect(locationOf(created)).to.equal('/signup/sent');
      else expect(created.status).to.equal(400);
      const forgot = await browser.get(`/forgot-password?return_to=${encodeURIComponent(target)}`);
      if (forgot.status === 200) expect(hiddenReturnTo(forgot.text)).to.equal(undefined);

      const user = await makeUser(idp.db);
      const login = new Browser(idp.url);
      await login.get('/login').expect(200);
      const signedIn = await login.submit('/login', { login: user.username, password: PASSWORD, return_to: target });
      if (signedIn.status === 302) expect(locationOf(signedIn)).to.equal('/groups');
      else expect(signedIn.status).to.equal(400);
    });
  }

  it('consent says where the person will be sent, and Not you? signs out and asks the same request again', async () => {
    const user = await makeUser(idp.db);
    const other = await makeUser(idp.db);
    const browser = await signIn(idp.url, user);
    const start = authorizeUrl(idp.url, { ...client, scope: 'groups:read-only', state: 'st-2' });
    const consent = await browser.follow(start).expect(200);
    expect(consent.text).to.match(/You will be sent to <strong>http:\/\/127\.0\.0\.1:9999<\/strong>/);
    expect(consent.text).to.include(user.username);

    const switched = await browser.submit(formAction(consent.text, '/switch-account')).expect(302);
    const restarted = new URL(locationOf(switched), idp.url);
    expect(restarted.pathname).to.equal('/login/oauth/authorize');
    expect(restarted.searchParams.get('state')).to.equal('st-2');
    expect(restarted.searchParams.get('redirect_uri')).to.equal(CALLBACK);
    const signInPage = await browser.follow(switched).expect(200);
    expect(signInPage.text).to.include('name="password"');
    // Signed out: the site no longer knows the first account.
    expect((await browser.get('/groups')).status).to.equal(302);

    const again = await browser.follow(start).expect(200);
    const signedIn = await browser.submit(formAction(again.text, '/login'), { login: other.username, password: PASSWORD });
    const otherConsent = await browser.follow(signedIn).expect(200);
    expect(otherConsent.text).to.include(other.username).and.not.to.include(user.username);
  });

  it('falls back to the default scope when every requested scope is unknown, and says which were ignored', async () => {
    const user = await makeUser(idp.db);
    const browser = await signIn(idp.url, user);
    const consent = await browser.follow(authorizeUrl(idp.url, { ...client, scope: 'user', state: 'st-3' })).expect(200);
    expect(consent.text).to.include('<span class="scope">groups:read-only</span>');
    expect(consent.text).to.match(/data-testid="ignored-scopes">[^<]*ignored: <span class="scope">user<\/span>/);
    const done = await browser.follow(await browser.submit(formAction(consent.text, '/confirm')), CALLBACK);
    const code = callbackOf(done, CALLBACK).searchParams.get('code')!;
    const token = await tokenRequest(idp.url, { query: { client_id: client.clientId, client_secret: client.clientSecret, code, redirect_uri: CALLBACK } });
    expect(token.status, token.text).to.equal(200);
    expect(token.body.scope).to.equal('groups:read-only');
  });

  it('names the ignored scopes when some requested scopes are known', async () => {
    const user = await makeUser(idp.db);
    const browser = await signIn(idp.url, user);
    const consent = await browser.follow(authorizeUrl(idp.url, { ...client, scope: 'openid,repo,profile,admin:org', state: 'st-4' })).expect(200);
    expect(consent.text).to.include('<span class="scope">openid</span>').and.to.include('<span class="scope">profile</span>');
    expect(consent.text).to.match(/ignored: <span class="scope">repo<\/span>, <span class="scope">admin:org<\/span>/);
    expect(consent.text).not.to.include('<span class="scope">groups:read-only</span>');
  });

  it('names no ignored scope a client made up itself', async () => {
    const user = await makeUser(idp.db);
    const browser = await signIn(idp.url, user);
    const consent = await browser.follow(authorizeUrl(idp.url, { ...client, scope: 'groups:read-only', state: 'st-5', extra: { ignored_scope: 'admin:everything' } })).expect(200);
    expect(consent.text).not.to.include('admin:everything').and.not.to.include('data-testid="ignored-scopes"');
  });

  it('the redirect-mismatch page shows the redirect_uri received and the application, not its registered callback', async () => {
    const browser = new Browser(idp.url);
    const wrong = 'https://attacker.example/steal';
    const page = await browser.get(authorizeUrl(idp.url, { clientId: client.clientId, redirectUri: wrong })).expect(400);
    expect(page.text).to.include('Build Monitor').and.to.include(wrong);
    expect(page.text).not.to.include(CALLBACK);
    expect(errorMessage(page.text)).to.include('Build Monitor');
  });
});

/**
 * An application that requires pushed authorization requests (RFC 9126) refuses a plain authorize
 * request, so the links that start its flow again push it again instead: each leads back into a
 * flow that works, even when followed long after the pushed request expired.
 */
describeEachProfile('Pages: a pushed authorization request keeps its place', function (profile) {
  this.timeout(30_000);

  const smtp = useMailServer();
  // A new account goes on to consent before verifying its address (the mailed link is followed later).
  const idp = useIdp(profile, () => ({ SMTP_URL: smtp.url, REQUIRE_VERIFIED_EMAIL: 'false' }));
  let app: { clientId: string; clientSecret: string };

  before(async () => {
    const owner = await makeUser(idp.db);
    const group = await makeGroup(idp.db, owner.id);
    app = await makeApp(idp.db, owner.id, group.id, { name: 'Pushed Monitor', requirePushedAuthorizationRequests: true });
  });

  /** The client's side: pushes its request, and sends the browser to authorize with the request_uri alone. */
  async function pushedStart(state: string): Promise<string> {
    const res = await call(idp, '/login/oauth/par', {
      method: 'POST',
      authorization: basicAuth(app.clientId, app.clientSecret),
      form: { response_type: 'code', client_id: app.clientId, redirect_uri: CALLBACK, scope: 'groups:read-only', state },
    });
    expect(res.status, res.text).to.equal(201);
    return `/login/oauth/authorize?${new URLSearchParams({ client_id: app.clientId, request_uri: res.body.request_uri })}`;
  }

  /** Consents on `consent` and returns the callback it leads to, whose code the client exchanges. */
  async function authorizeOn(browser: Browser, consent: Page, state: string): Promise<void> {
    expect(consent.text).to.include('Authorize <span data-testid="app-name">Pushed Monitor</span>');
    const callback = callbackOf(await browser.follow(await browser.submit(formAction(consent.text, '/confirm')), CALLBACK), CALLBACK);
    expect(callback.searchParams.get('state')).to.equal(state);
    const token = await tokenRequest(idp.url, { query: { client_id: app.clientId, client_secret: app.clientSecret, code: callback.searchParams.get('code')!, redirect_uri: CALLBACK } });
    expect(token.status, token.text).to.equal(200);
  }

  /** Where a restart link leads: a new pushed request, then authorize with only client_id and its request_uri. */
  async function expectPushedAgain(browser: Browser, link: string): Promise<Page> {
    expect(link).to.match(/^\/login\/oauth\/restart\?request=/);
    // The request's parameters are not in the link to read.
    expect(link).not.to.include('st-par').and.not.to.include(encodeURIComponent(CALLBACK));
    const pushed = await browser.get(link).expect(302);
    const authorize = new URL(locationOf(pushed), idp.url);
    expect(authorize.pathname).to.equal('/login/oauth/authorize');
    expect([...authorize.searchParams.keys()].sort()).to.deep.equal(['client_id', 'request_uri']);
    return browser.follow(pushed, CALLBACK);
  }

  it('signs up from the flow, and the mailed link, followed after the pushed request expired, continues to its consent', async () => {
    const browser = new Browser(idp.url);
    const page = await browser.follow(await pushedStart('st-par')).expect(200);
    expect(page.text).to.include('Pushed Monitor');
    const signupPage = await browser.get(hrefOf(page.text, 'Create an account')).expect(200);
    const back = hiddenReturnTo(signupPage.text)!;
    expect(hrefOf(page.text, 'Forgot password\\?')).to.equal(`/forgot-password?return_to=${encodeURIComponent(back)}`);
    const username = `par-${Date.now().toString(36)}`;
    const signupForm = formOf(signupPage.text, '/signup');
    const requested = await browser.postForm(signupForm.action, filled(signupForm, { username, email: `${username}@example.test`, name: 'New Person', password: PASSWORD })).expect(302);
    expect(locationOf(requested)).to.equal(`/signup/sent?return_to=${encodeURIComponent(back)}`);

    const link = linkIn(await smtp.next(`${username}@example.test`), idp.url);
    expect(link.searchParams.get('return_to')).to.equal(back);
    // Followed two hours later: the pushed request lived a minute, the restart link still works.
    await withClockAhead(2 * 60 * 60 * 1000, async () => {
      const confirmPage = await browser.get(link).expect(200);
      const confirmForm = formOf(confirmPage.text, '/signup/confirm');
      const created = await browser.postForm(confirmForm.action, filled(confirmForm, { password: PASSWORD })).expect(302);
      expect(locationOf(created)).to.equal(back);
      await authorizeOn(browser, await expectPushedAgain(browser, back), 'st-par');
    });
  });

  it('Forgot password? mails a link that ends back in the pushed flow', async () => {
    const user = await makeUser(idp.db);
    const browser = new Browser(idp.url);
    const page = await browser.follow(await pushedStart('st-par')).expect(200);
    const forgotPage = await browser.get(hrefOf(page.text, 'Forgot password\\?')).expect(200);
    const back = hiddenReturnTo(forgotPage.text)!;
    await browser.submit('/forgot-password', { email: user.email, return_to: back }).expect(302);
    const link = linkIn(await smtp.next(user.email), idp.url);
    const resetPage = await browser.get(link).expect(200);
    const set = await browser.submit('/reset-password', { token: link.searchParams.get('token')!, password: 'a brand new passphrase', password_confirmation: 'a brand new passphrase', return_to: hiddenReturnTo(resetPage.text)! }).expect(302);
    const done = await browser.follow(set).expect(200);
    const again = await expectPushedAgain(browser, hrefOf(done.text, 'Sign in'));
    const consent = await browser.follow(await browser.submit(formAction(again.text, '/login'), { login: user.username, password: 'a brand new passphrase' })).expect(200);
    await authorizeOn(browser, consent, 'st-par');
  });

  it('Not you? signs out and asks the same pushed request again', async () => {
    const user = await makeUser(idp.db);
    const other = await makeUser(idp.db);
    const browser = await signIn(idp.url, user);
    const consent = await browser.follow(await pushedStart('st-par-2')).expect(200);
    expect(consent.text).to.include(user.username);
    const switched = await browser.submit(formAction(consent.text, '/switch-account')).expect(302);
    const signInPage = await expectPushedAgain(browser, locationOf(switched));
    expect(signInPage.text).to.include('name="password"');
    const otherConsent = await browser.follow(await browser.submit(formAction(signInPage.text, '/login'), { login: other.username, password: PASSWORD })).expect(200);
    expect(otherConsent.text).to.include(other.username).and.not.to.include(user.username);
    await authorizeOn(browser, otherConsent, 'st-par-2');
  });

  it('answers a restart link that was altered or has expired with a page that says so', async () => {
    const browser = new Browser(idp.url);
    const page = await browser.follow(await pushedStart('st-par')).expect(200);
    const back = new URL(hrefOf(page.text, 'Create an account'), idp.url).searchParams.get('return_to')!;
    const sealed = new URL(back, idp.url).searchParams.get('request')!;
    const altered = `/login/oauth/restart?request=${sealed.slice(0, -4)}${sealed.slice(-4) === 'AAAA' ? 'BBBB' : 'AAAA'}`;
    for (const link of [altered, '/login/oauth/restart', '/login/oauth/restart?request=%F0%9F%92%A9']) {
      const refused = await browser.get(link).expect(400);
      expect(errorMessage(refused.text)).to.match(/expired or is no longer valid/);
    }
    await withClockAhead(25 * 60 * 60 * 1000, async () => {
      expect(errorMessage((await browser.get(back).expect(400)).text)).to.match(/expired or is no longer valid/);
    });
  });
});
