import { expect } from 'chai';
import * as client from 'openid-client';
import { createLogger } from '../../src/log.js';
import { createMailer } from '../../src/services/mail.js';
import { changing } from '../../src/services/change-versions.js';
import { sendVerification } from '../../src/services/verification.js';
import { describeEachProfile, useIdp, type RunningIdp } from '../helpers/app.js';
import { Browser, type Page } from '../helpers/browser.js';
import { setEmailVerified } from '../helpers/email-verification.js';
import { makeClient, makeUser, type Client, type TestUser } from '../helpers/factories.js';
import { csrfFrom, formAction, unescapeHtml } from '../helpers/html.js';
import { authorize, authorizeUrl } from '../helpers/oauth.js';
import { linkIn, useMailServer, type MailServer } from '../helpers/smtp.js';

const REDIRECT_URI = 'http://127.0.0.1:9999/openid-client/callback';

/** Mails a verification link to the user (as sign-up does) and follows it from the message that arrives. */
async function verifyThroughMail(server: RunningIdp, smtp: MailServer, user: TestUser): Promise<void> {
  const logger = createLogger('silent');
  const mailer = createMailer({ ...server.config.mail, logLinks: false, logger });
  try {
    await sendVerification({ db: server.db, config: server.config, mailer, log: logger }, user);
  } finally {
    mailer.close();
  }
  const link = linkIn(await smtp.next(user.email), server.url);
  expect((await fetch(link, { redirect: 'manual' })).status).to.equal(302);
}

describeEachProfile('email_verified as openid-client sees it', (profile) => {
  const smtp = useMailServer();
  // Off, so that an account whose address is not verified yet can go through the flow at all.
  const server = useIdp(profile, () => ({ SMTP_URL: smtp.url, REQUIRE_VERIFIED_EMAIL: 'false' }));
  let user: TestUser;
  let config: client.Configuration;

  before(async () => {
    const app = await makeClient(server.db, { user: await makeUser(server.db, { verified: false }), redirectUri: REDIRECT_URI });
    user = app.user;
    await setEmailVerified(server.db, user, false);
    config = await client.discovery(new URL(server.url), app.clientId, app.clientSecret, undefined, { execute: [client.allowInsecureRequests] });
  });

  /** One authorization code flow with PKCE and nonce; the ID token's claims and userinfo's. */
  async function signInWithOpenidClient(browser: Browser) {
    const verifier = client.randomPKCECodeVerifier();
    const nonce = client.randomNonce();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT_URI,
      scope: 'openid email',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      nonce,
      state: 'state-1',
    });
    const pkceAndNonce = Object.fromEntries([...url.searchParams].filter(([k]) => ['code_challenge', 'code_challenge_method', 'nonce'].includes(k)));
    const callback = await authorize(
      browser,
      { clientId: url.searchParams.get('client_id')!, redirectUri: REDIRECT_URI, scope: 'openid email', extra: pkceAndNonce, state: 'state-1' },
      user,
    );
    const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedNonce: nonce, expectedState: 'state-1' });
    const claims = tokens.claims()!;
    const info = await client.fetchUserInfo(config, tokens.access_token, claims.sub);
    return { idToken: claims, userinfo: info };
  }

  it('says false with no address until the mailed link is followed, then the address and true, in the ID token and userinfo', async () => {
    const browser = new Browser(server.url);
    const before = await signInWithOpenidClient(browser);
    // An unverified address is never released: a client that links accounts by e-mail could be handed someone else's.
    expect(before.idToken).to.not.have.property('email');
    expect(before.userinfo).to.not.have.property('email');
    expect(before.idToken.email_verified).to.equal(false);
    expect(before.userinfo.email_verified).to.equal(false);

    await verifyThroughMail(server, smtp, user);

    const after = await signInWithOpenidClient(browser);
    expect(after.idToken.email).to.equal(user.email);
    expect(after.userinfo.email).to.equal(user.email);
    expect(after.idToken.email_verified).to.equal(true);
    expect(after.userinfo.email_verified).to.equal(true);
  });
});

describeEachProfile('REQUIRE_VERIFIED_EMAIL', (profile) => {
  const smtp = useMailServer();
  const server = useIdp(profile, () => ({ SMTP_URL: smtp.url, REQUIRE_VERIFIED_EMAIL: 'true' }));
  let app: Client;

  before(async () => {
    app = await makeClient(server.db, { redirectUri: REDIRECT_URI });
  });

  const flow = (extra: Record<string, string> = {}) => authorizeUrl(server.url, { clientId: app.clientId, redirectUri: REDIRECT_URI, scope: 'openid email', extra });

  /** Opens the authorize URL, signs in on the flow's page, and returns the page the flow lands on. */
  async function signInToFlow(browser: Browser, user: TestUser): Promise<Page> {
    const signInPage = await browser.follow(flow());
    return browser.follow(await browser.submit(formAction(signInPage.text, '/login'), { login: user.username, password: user.password }));
  }

  it('refuses an unverified account with a page that says so and offers Resend; once verified the flow goes on', async () => {
    const user = await makeUser(server.db, { verified: false });
    const browser = new Browser(server.url);
    const refused = await signInToFlow(browser, user);
    expect(refused.status).to.equal(403);
    const html = refused.text;
    expect(html).to.include('Verify your e-mail address');
    expect(html).to.include(user.email);
    expect(html).not.to.include('/confirm');
    const interaction = /href="(\/interaction\/[^"]+)"/.exec(html)![1]!;

    // Posting the consent form directly is refused too.
    const confirm = await browser.postForm(`${interaction}/confirm`, { _csrf: csrfFrom(html) });
    expect(confirm.status).to.equal(403);

    // The mailed link returns to the flow's start, which outlives this interaction.
    const flowStart = unescapeHtml(/name="return_to" value="([^"]+)"/.exec(html)![1]!);
    expect(flowStart).to.match(/^\/login\/oauth\/authorize\?/);
    const resendFromPage = await browser.postForm(formAction(html, '/verify-email/resend'), { _csrf: csrfFrom(html), return_to: flowStart });
    expect(resendFromPage.headers.get('location')).to.equal(`/verify-email/sent?return_to=${encodeURIComponent(flowStart)}`);
    expect(linkIn(await smtp.next(user.email), server.url).searchParams.get('return_to')).to.equal(flowStart);

    const resend = await browser.postForm(formAction(html, '/verify-email/resend'), { _csrf: csrfFrom(html), return_to: interaction });
    expect(resend.headers.get('location')).to.equal(`/verify-email/sent?return_to=${encodeURIComponent(interaction)}`);
    const link = linkIn(await smtp.next(user.email), server.url);
    await browser.get(link).expect(302);

    const consent = await browser.get(interaction).expect(200);
    const done = await browser.submit(formAction(consent.text, '/confirm'));
    const callback = await browser.follow(done);
    const location = new URL(callback.headers.get('location')!);
    expect(`${location.origin}${location.pathname}`).to.equal(REDIRECT_URI);
    expect(location.searchParams.get('code')).to.be.a('string');
  });

  it('is not skipped by an existing grant: an account whose address became unverified meets the refusal again', async () => {
    const user = await makeUser(server.db);
    const browser = new Browser(server.url);
    const first = await authorize(browser, { clientId: app.clientId, redirectUri: REDIRECT_URI, scope: 'openid email' }, user);
    expect(first.searchParams.get('code')).to.be.a('string');

    // The address counts as unverified again (no page does this any more: an operator's hand in the database).
    await changing(server.db, [`user:${user.id}`], () => server.db('users').where({ id: user.id }).update({ email_verified_at: null }));

    const silent = new URL((await browser.follow(flow({ prompt: 'none' }))).headers.get('location')!);
    expect(silent.searchParams.get('error')).to.equal('interaction_required');
    expect(silent.searchParams.get('code')).to.equal(null);
    const page = await browser.follow(flow());
    expect(page.status).to.equal(403);
    expect(page.text).to.include('Verify your e-mail address');
  });

  it('lets a verified account through as before', async () => {
    const user = await makeUser(server.db);
    await verifyThroughMail(server, smtp, user);
    const callback = await authorize(new Browser(server.url), { clientId: app.clientId, redirectUri: REDIRECT_URI, scope: 'openid email' }, user);
    expect(callback.searchParams.get('code')).to.be.a('string');
  });
});
