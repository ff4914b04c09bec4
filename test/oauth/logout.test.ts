import { expect } from 'chai';
import { updateApplication } from '../../src/services/apps.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { Browser, signIn } from '../helpers/browser.js';
import { appAccess, type Client, makeApp, makeClient, makeGroup, type TestUser } from '../helpers/factories.js';
import { authorize, tokenRequest } from '../helpers/oauth.js';

const LOGOUT = '/login/oauth/logout';
const SIGNED_OUT_URL = 'http://127.0.0.1:9999/signed-out';
/** What Chromium sends for a page, so the library answers its errors as a page. */
const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

/** The hidden field of the library's logout form and where the form posts. */
function logoutForm(html: string): { action: string; xsrf: string } {
  const form = /<form id="op\.logoutForm" method="post" action="([^"]+)"><input type="hidden" name="xsrf" value="([^"]+)"\/><\/form>/.exec(html);
  if (!form) throw new Error(`no logout form on the page: ${html.slice(0, 300)}`);
  return { action: form[1]!, xsrf: form[2]! };
}

/** Inline script: a <script> element without a src. */
function inlineScripts(html: string): string[] {
  return [...html.matchAll(/<script(?![^>]*\bsrc=)[^>]*>/g)].map((m) => m[0]);
}

/** RP-initiated logout: the confirmation page, the return to a registered sign-out URL, the session's end. */
describeEachProfile(`RP-initiated logout at ${LOGOUT}`, (profile) => {
  const server = useIdp(profile);
  let user: TestUser;
  let client: Client;

  before(async () => {
    client = await makeClient(server.db);
    user = client.user;
    await updateApplication(server.db, server.idp.provider, await appAccess(server.db, user.id, client.clientId), { signOutRedirectURLs: [SIGNED_OUT_URL] });
  });

  const signedIn = () => signIn(server.url, user);

  const logoutUrl = (params: Record<string, string>) => `${LOGOUT}?${new URLSearchParams(params)}`;

  /** Signed in on the site? /groups answers 200 only then. */
  async function isSignedIn(browser: Browser): Promise<boolean> {
    return (await browser.get('/groups')).status === 200;
  }

  it('asks a signed-in person to confirm, on a page with the site\'s header showing who they are', async () => {
    const browser = await signedIn();
    const res = await browser.get(logoutUrl({ client_id: client.clientId, post_logout_redirect_uri: SIGNED_OUT_URL }));
    expect(res.status).to.equal(200);
    expect(res.headers.get('cache-control')).to.include('no-store');
    const html = res.text;
    expect(html).to.include('<h1>Sign out of Horizon ID?</h1>');
    expect(html).to.include('data-testid="logout-client">Test App<');
    expect(html).to.match(new RegExp(`<span class="who"[^>]*>${user.username}</span>`));
    expect(html).not.to.include('<a href="/login">Sign in</a>');
    expect(html).to.include('<link rel="stylesheet" href="/static/site.css">');
    expect(html).to.match(/<button type="submit" form="op\.logoutForm" name="logout" value="yes"[^>]*>Yes, sign me out<\/button>/);
    expect(logoutForm(html).action).to.equal(`${server.url}${LOGOUT}/confirm`);
  });

  it('carries no inline script on the confirmation page', async () => {
    const browser = await signedIn();
    const html = (await browser.get(logoutUrl({ client_id: client.clientId, post_logout_redirect_uri: SIGNED_OUT_URL }))).text;
    expect(inlineScripts(html)).to.deep.equal([]);
  });

  it('signs out on "Yes" and returns to the registered sign-out URL with the state', async () => {
    const browser = await signedIn();
    const page = await browser.get(logoutUrl({ client_id: client.clientId, post_logout_redirect_uri: SIGNED_OUT_URL, state: 'st-1' }));
    const { action, xsrf } = logoutForm(page.text);
    const res = await browser.postForm(action, { xsrf, logout: 'yes' });
    expect(res.status).to.equal(303);
    expect(res.headers.get('location')).to.equal(`${SIGNED_OUT_URL}?state=st-1`);
    expect(await isSignedIn(browser)).to.equal(false);
  });

  it('keeps the person signed in on "No" and still returns to the application', async () => {
    const browser = await signedIn();
    const page = await browser.get(logoutUrl({ client_id: client.clientId, post_logout_redirect_uri: SIGNED_OUT_URL }));
    const { action, xsrf } = logoutForm(page.text);
    const res = await browser.postForm(action, { xsrf });
    expect(res.status).to.equal(303);
    expect(res.headers.get('location')).to.equal(SIGNED_OUT_URL);
    expect(await isSignedIn(browser)).to.equal(true);
  });

  it('accepts an id_token_hint in place of client_id', async () => {
    const browser = await signedIn();
    const params = (await authorize(browser, { ...client, scope: 'openid', extra: { nonce: 'n-1' } }, user)).searchParams;
    const tokens = await tokenRequest(server.url, {
      form: { client_id: client.clientId, client_secret: client.clientSecret, code: params.get('code')!, redirect_uri: client.redirectUri },
    });
    expect(tokens.status, tokens.text).to.equal(200);
    const page = await browser.get(logoutUrl({ id_token_hint: String(tokens.body.id_token), post_logout_redirect_uri: SIGNED_OUT_URL }));
    expect(page.status).to.equal(200);
    const { action, xsrf } = logoutForm(page.text);
    const res = await browser.postForm(action, { xsrf, logout: 'yes' });
    expect(res.headers.get('location')).to.equal(SIGNED_OUT_URL);
    expect(await isSignedIn(browser)).to.equal(false);
  });

  it('refuses an unregistered sign-out URL with a 400 page that still shows who is signed in, and keeps the session', async () => {
    const browser = await signedIn();
    const res = await browser.request(logoutUrl({ client_id: client.clientId, post_logout_redirect_uri: 'http://127.0.0.1:9999/elsewhere' }), { headers: { accept: BROWSER_ACCEPT } });
    expect(res.status).to.equal(400);
    expect(res.headers.get('content-type')).to.match(/^text\/html/);
    const html = res.text;
    expect(html).to.include('post_logout_redirect_uri not registered');
    expect(html).to.match(new RegExp(`<span class="who"[^>]*>${user.username}</span>`));
    expect(html).not.to.include('<a href="/login">Sign in</a>');
    expect(await isSignedIn(browser)).to.equal(true);
  });

  it('matches the sign-out URL exactly: a trailing slash is another URL', async () => {
    const browser = await signedIn();
    const res = await browser.get(logoutUrl({ client_id: client.clientId, post_logout_redirect_uri: `${SIGNED_OUT_URL}/` }));
    expect(res.status).to.equal(400);
    expect(res.text).to.include('post_logout_redirect_uri not registered');
  });

  it('uses sign-out URLs edited a moment ago', async () => {
    const group = await makeGroup(server.db, user.id);
    const app = await makeApp(server.db, user.id, group.id);
    const browser = await signedIn();
    const url = logoutUrl({ client_id: app.clientId, post_logout_redirect_uri: SIGNED_OUT_URL });
    expect((await browser.get(url)).status).to.equal(400);
    await updateApplication(server.db, server.idp.provider, await appAccess(server.db, user.id, app.clientId), { signOutRedirectURLs: [SIGNED_OUT_URL] });
    expect((await browser.get(url)).status).to.equal(200);
  });

  it('sends a person who is not signed in straight back through a form, with no inline script', async () => {
    const browser = new Browser(server.url);
    const res = await browser.get(logoutUrl({ client_id: client.clientId, post_logout_redirect_uri: SIGNED_OUT_URL, state: 'st-2' }));
    expect(res.status).to.equal(200);
    const html = res.text;
    expect(inlineScripts(html)).to.deep.equal([]);
    expect(html).to.include('<a href="/login">Sign in</a>');
    const form = /<form method="post" action="([^"]+)" data-auto-submit>\s*<input type="hidden" name="xsrf" value="([^"]+)">\s*<input type="hidden" name="logout" value="yes">/.exec(html);
    expect(form, html).to.not.equal(null);
    const done = await browser.postForm(form![1]!, { xsrf: form![2]!, logout: 'yes' });
    expect(done.status).to.equal(303);
    expect(done.headers.get('location')).to.equal(`${SIGNED_OUT_URL}?state=st-2`);
  });

  it('ends on our "signed out" page when no sign-out URL is given', async () => {
    const browser = await signedIn();
    const page = await browser.get(logoutUrl({ client_id: client.clientId }));
    const { action, xsrf } = logoutForm(page.text);
    const res = await browser.postForm(action, { xsrf, logout: 'yes' });
    expect(res.status).to.equal(303);
    const success = await browser.follow(res);
    expect(success.status).to.equal(200);
    const html = success.text;
    expect(html).to.include('<h1>You are signed out</h1>');
    expect(html).to.include('<a href="/login">Sign in</a>');
    expect(inlineScripts(html)).to.deep.equal([]);
  });

  it('shows the same confirmation at GET /logout (a typed or bookmarked address), signing out only on "Yes"', async () => {
    const browser = await signedIn();
    const page = await browser.follow('/logout');
    expect(page.status).to.equal(200);
    expect(page.url.pathname).to.equal(LOGOUT);
    expect(page.text).to.include('<h1>Sign out of Horizon ID?</h1>');
    expect(await isSignedIn(browser)).to.equal(true);
    const { action, xsrf } = logoutForm(page.text);
    await browser.postForm(action, { xsrf, logout: 'yes' }).expect(303);
    expect(await isSignedIn(browser)).to.equal(false);
  });

  it('leaves the application\'s tokens working after the person signs out', async () => {
    const browser = await signedIn();
    const params = (await authorize(browser, client, user)).searchParams;
    const tokens = await tokenRequest(server.url, {
      form: { client_id: client.clientId, client_secret: client.clientSecret, code: params.get('code')!, redirect_uri: client.redirectUri },
    });
    expect(tokens.status, tokens.text).to.equal(200);
    const page = await browser.get(logoutUrl({ client_id: client.clientId, post_logout_redirect_uri: SIGNED_OUT_URL }));
    const { action, xsrf } = logoutForm(page.text);
    expect((await browser.postForm(action, { xsrf, logout: 'yes' })).status).to.equal(303);
    const api = await fetch(`${server.url}/apis/v2/groups`, { headers: { authorization: `Bearer ${String(tokens.body.access_token)}` } });
    expect(api.status).to.equal(200);
    const refreshed = await tokenRequest(server.url, {
      form: { grant_type: 'refresh_token', refresh_token: String(tokens.body.refresh_token), client_id: client.clientId, client_secret: client.clientSecret },
    });
    expect(refreshed.status, refreshed.text).to.equal(200);
  });

  it('refuses a logout form posted without its xsrf value, keeping the session', async () => {
    const browser = await signedIn();
    const page = await browser.get(logoutUrl({ client_id: client.clientId }));
    const { action } = logoutForm(page.text);
    const res = await browser.postForm(action, { xsrf: 'forged', logout: 'yes' });
    expect(res.status).to.equal(400);
    expect(await isSignedIn(browser)).to.equal(true);
  });
});
