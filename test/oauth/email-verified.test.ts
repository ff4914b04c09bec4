import { expect } from 'chai';
import * as client from 'openid-client';
import { profiles, startIdp, type RunningIdp } from '../helpers/app.js';
import { csrfFrom, formAction, UserAgent } from '../helpers/browser-less.js';
import { makeApp, makeGroup, makeUser } from '../helpers/factories.js';
import { authorizeUrl, runAuthorization } from '../helpers/oauth.js';
import { linkIn, startMailServer, type MailServer } from '../helpers/smtp.js';
import { createLogger } from '../../src/log.js';
import { createMailer } from '../../src/services/mail.js';
import { sendVerification } from '../../src/services/verification.js';

const REDIRECT_URI = 'http://127.0.0.1:9999/openid-client/callback';
type TestUser = Awaited<ReturnType<typeof makeUser>>;

/** Mails a verification link to the user (as sign-up does) and follows it from the message that arrives. */
async function verifyThroughMail(server: RunningIdp, smtp: MailServer, user: TestUser): Promise<void> {
  const logger = createLogger('silent');
  const mailer = createMailer({ ...server.config.mail, logLinks: false, logger });
  try {
    await sendVerification({ db: server.idp.db, config: server.config, mailer, log: logger }, user);
  } finally {
    mailer.close();
  }
  const link = linkIn(await smtp.next(user.email), server.url);
  expect((await fetch(link, { redirect: 'manual' })).status).to.equal(302);
}

for (const profile of profiles()) {
  describe(`email_verified as openid-client sees it (${profile})`, () => {
    let smtp: MailServer;
    let server: RunningIdp;
    let user: TestUser;
    let config: client.Configuration;

    before(async () => {
      smtp = await startMailServer();
      server = await startIdp(profile, { SMTP_URL: smtp.url });
      user = await makeUser(server.idp.db);
      const group = await makeGroup(server.idp.db, user.id);
      const app = await makeApp(server.idp.db, user.id, group.id, { callbackURL: REDIRECT_URI });
      config = await client.discovery(new URL(server.url), app.clientId, app.clientSecret, undefined, { execute: [client.allowInsecureRequests] });
    });
    after(async () => {
      await server?.stop();
      await smtp?.close();
    });

    /** One authorization code flow with PKCE and nonce; the ID token's claims and userinfo's. */
    async function signInWithOpenidClient(agent: UserAgent) {
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
      const callback = await runAuthorization(agent, {
        clientId: url.searchParams.get('client_id')!,
        redirectUri: REDIRECT_URI,
        scope: 'openid email',
        extra: Object.fromEntries([...url.searchParams].filter(([k]) => ['code_challenge', 'code_challenge_method', 'nonce'].includes(k))),
        state: 'state-1',
        login: { login: user.username, password: user.password },
      });
      const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedNonce: nonce, expectedState: 'state-1' });
      const claims = tokens.claims()!;
      const info = await client.fetchUserInfo(config, tokens.access_token, claims.sub);
      return { idToken: claims, userinfo: info };
    }

    it('says false until the mailed link is followed, then true in the ID token and userinfo', async () => {
      const agent = new UserAgent(server.url);
      const before = await signInWithOpenidClient(agent);
      expect(before.idToken.email).to.equal(user.email);
      expect(before.idToken.email_verified).to.equal(false);
      expect(before.userinfo.email_verified).to.equal(false);

      await verifyThroughMail(server, smtp, user);

      const after = await signInWithOpenidClient(agent);
      expect(after.idToken.email_verified).to.equal(true);
      expect(after.userinfo.email_verified).to.equal(true);
    });
  });

  describe(`REQUIRE_VERIFIED_EMAIL (${profile})`, () => {
    let smtp: MailServer;
    let server: RunningIdp;
    let app: Awaited<ReturnType<typeof makeApp>>;
    let owner: TestUser;

    before(async () => {
      smtp = await startMailServer();
      server = await startIdp(profile, { SMTP_URL: smtp.url, REQUIRE_VERIFIED_EMAIL: 'true' });
      owner = await makeUser(server.idp.db);
      const group = await makeGroup(server.idp.db, owner.id);
      app = await makeApp(server.idp.db, owner.id, group.id, { callbackURL: REDIRECT_URI });
    });
    after(async () => {
      await server?.stop();
      await smtp?.close();
    });

    const flow = (extra: Record<string, string> = {}) =>
      authorizeUrl(server.url, { clientId: app.clientId, redirectUri: REDIRECT_URI, scope: 'openid email', extra });

    /** Opens the authorize URL, signs in on the flow's page, and returns the page the flow lands on. */
    async function signInToFlow(agent: UserAgent, user: TestUser): Promise<Response> {
      const signInPage = await agent.follow(flow());
      const html = await signInPage.text();
      const res = await agent.postForm(formAction(html, '/login'), { _csrf: csrfFrom(html), login: user.username, password: user.password });
      return agent.follow(new URL(res.headers.get('location')!, server.url).toString());
    }

    it('refuses an unverified account with a page that says so and offers Resend; once verified the flow goes on', async () => {
      const user = await makeUser(server.idp.db);
      const agent = new UserAgent(server.url);
      const refused = await signInToFlow(agent, user);
      expect(refused.status).to.equal(403);
      const html = await refused.text();
      expect(html).to.include('Verify your e-mail address');
      expect(html).to.include(user.email);
      expect(html).not.to.include('/confirm');
      const interaction = /href="(\/interaction\/[^"]+)"/.exec(html)![1]!;

      // Posting the consent form directly is refused too.
      const confirm = await agent.postForm(`${interaction}/confirm`, { _csrf: csrfFrom(html) });
      expect(confirm.status).to.equal(403);

      const resend = await agent.postForm(formAction(html, '/verify-email/resend'), { _csrf: csrfFrom(html), return_to: interaction });
      expect(resend.headers.get('location')).to.equal(`/verify-email/sent?return_to=${encodeURIComponent(interaction)}`);
      const link = linkIn(await smtp.next(user.email), server.url);
      expect((await agent.get(link.toString())).status).to.equal(302);

      const consent = await agent.get(interaction);
      expect(consent.status).to.equal(200);
      const consentHtml = await consent.text();
      const done = await agent.postForm(formAction(consentHtml, '/confirm'), { _csrf: csrfFrom(consentHtml) });
      const callback = await agent.follow(new URL(done.headers.get('location')!, server.url).toString());
      const location = new URL(callback.headers.get('location')!);
      expect(`${location.origin}${location.pathname}`).to.equal(REDIRECT_URI);
      expect(location.searchParams.get('code')).to.be.a('string');
    });

    it('is not skipped by an existing grant: an account whose address became unverified meets the refusal again', async () => {
      const user = await makeUser(server.idp.db);
      await verifyThroughMail(server, smtp, user);
      const agent = new UserAgent(server.url);
      const first = await runAuthorization(agent, { clientId: app.clientId, redirectUri: REDIRECT_URI, scope: 'openid email', login: { login: user.username, password: user.password } });
      expect(first.searchParams.get('code')).to.be.a('string');

      // An e-mail change (the Profile page) makes the address unverified again.
      await sendVerification({ db: server.idp.db, config: server.config, mailer: { send: async () => {}, close() {} }, log: createLogger('silent') }, user);

      const silent = new URL((await agent.follow(flow({ prompt: 'none' }))).headers.get('location')!);
      expect(silent.searchParams.get('error')).to.equal('interaction_required');
      expect(silent.searchParams.get('code')).to.equal(null);
      const page = await agent.follow(flow());
      expect(page.status).to.equal(403);
      expect(await page.text()).to.include('Verify your e-mail address');
    });

    it('lets a verified account through as before', async () => {
      const user = await makeUser(server.idp.db);
      await verifyThroughMail(server, smtp, user);
      const callback = await runAuthorization(new UserAgent(server.url), {
        clientId: app.clientId,
        redirectUri: REDIRECT_URI,
        scope: 'openid email',
        login: { login: user.username, password: user.password },
      });
      expect(callback.searchParams.get('code')).to.be.a('string');
    });
  });
}
