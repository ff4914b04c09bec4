import { expect } from 'chai';
import { describeEachProfile, freePort, useIdp } from '../helpers/app.js';
import { Browser, signIn, type Page } from '../helpers/browser.js';
import { makeUser, type TestUser } from '../helpers/factories.js';
import { errorMessage } from '../helpers/html.js';

/** The page is the site's error page: its layout and stylesheet, the status named on it. */
function expectErrorPage(page: Page, status: number): void {
  expect(page.status, page.text.slice(0, 300)).to.equal(status);
  expect(page.headers.get('content-type')).to.match(/^text\/html/);
  expect(page.text).to.include('<link rel="stylesheet" href="/static/site.css">').and.to.include('<header class="top">');
  expect(page.text).to.match(new RegExp(`data-testid="error-status">${status}<`));
  expect(errorMessage(page.text)).to.be.a('string').and.not.equal('');
}

/** The header of a signed-in person: their name and Account settings, not "Sign in / Sign up". */
function expectSignedInHeader(page: Page, user: TestUser): void {
  const header = /<header class="top">[\s\S]*?<\/header>/.exec(page.text)?.[0] ?? '';
  expect(header).to.include(user.username).and.to.include('Account settings');
  expect(header).not.to.include('href="/signup"').and.not.to.include('href="/login"');
}

describeEachProfile('Pages: error pages', function (profile) {
  this.timeout(30_000);

  let deadSmtp = 0;
  before(async () => {
    deadSmtp = await freePort();
  });
  // A mail server that is not there: Resend the link answers 503, and past its limit 429.
  const idp = useIdp(profile, () => ({ SMTP_URL: `smtp://127.0.0.1:${deadSmtp}`, RATE_LIMIT_VERIFY_EMAIL: '1/1h' }));
  let user: TestUser;
  let browser: Browser;

  before(async () => {
    // Unverified, so that Resend the link has something to send.
    user = await makeUser(idp.db, { verified: false });
    browser = await signIn(idp.url, user);
  });

  it('answers an unknown page with the styled 404 and the signed-in header', async () => {
    const page = await browser.get('/no-such-page');
    expectErrorPage(page, 404);
    expectSignedInHeader(page, user);
  });

  it('answers an unknown path under the OAuth endpoints (the provider\'s) with the same 404 page', async () => {
    for (const path of ['/login/oauth/no-such-endpoint', '/interaction', '/.well-known/nothing']) {
      const page = await browser.get(path);
      expectErrorPage(page, 404);
      expectSignedInHeader(page, user);
    }
    const signedOut = await new Browser(idp.url).get('/no-such-page');
    expectErrorPage(signedOut, 404);
    expect(signedOut.text).to.include('href="/login"');
  });

  it('keeps the API answering JSON for its own unknown paths', async () => {
    const res = await browser.get('/apis/v2/no-such-resource');
    expect(res.status).to.equal(404);
    expect(res.headers.get('content-type')).to.match(/^application\/json/);
    expect(JSON.parse(res.text).error).to.be.a('string');
  });

  it('answers a page asked with a method it does not take with 405 and Allow', async () => {
    const page = await browser.get('/verify-email/resend');
    expectErrorPage(page, 405);
    expect(page.headers.get('allow')).to.equal('POST');
    expectSignedInHeader(page, user);
  });

  it('shows 403 (a form without its token) with the signed-in header, though the form was refused before the session was read', async () => {
    const page = await browser.postForm('/groups/new', { name: 'x', path: 'x' });
    expectErrorPage(page, 403);
    expectSignedInHeader(page, user);
  });

  it('shows 400 (an expired sign-in request) with the signed-in header', async () => {
    const page = await browser.get('/interaction/not-a-real-uid');
    expectErrorPage(page, 400);
    expectSignedInHeader(page, user);
  });

  it('shows 503 (mail server away) and then 429 (too many links) with the signed-in header', async () => {
    await browser.get('/groups').expect(200);
    const unavailable = await browser.submit('/verify-email/resend');
    expectErrorPage(unavailable, 503);
    expectSignedInHeader(unavailable, user);
    await browser.get('/groups').expect(200);
    const limited = await browser.submit('/verify-email/resend');
    expectErrorPage(limited, 429);
    expect(Number(limited.headers.get('retry-after'))).to.be.greaterThan(0);
    expectSignedInHeader(limited, user);
  });
});
