import { expect } from 'chai';
import { createRemoteJWKSet, decodeJwt, jwtVerify, type JWTPayload } from 'jose';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { listSessionIndex } from '../../src/db/sessions.js';
import { setSiteAdmin } from '../../src/services/admin.js';
import { updateApplication } from '../../src/services/apps.js';
import { describeEachProfile, freePort, listen, useHooks, useIdp, waitFor } from '../helpers/app.js';
import { Browser, signIn } from '../helpers/browser.js';
import { appAccess, makeApp, makeClient, makeUser, type Client, type TestUser } from '../helpers/factories.js';
import { authorize, tokenRequest } from '../helpers/oauth.js';
import { linkIn, useMailServer } from '../helpers/smtp.js';

const CLI = { userId: 0, ip: null, admin: true };
const EVENT = 'http://schemas.openid.net/event/backchannel-logout';
const NEW_PASSWORD = 'a brand new passphrase 42';

/**
 * A relying party's back-channel logout endpoint: it takes each POSTed `logout_token`, validates
 * it as Back-Channel Logout 1.0 §2.6 asks (signature against the provider's JWKS, `typ`
 * logout+jwt, `iss`, `aud`, `iat`, the event, `sid` and `sub`, no `nonce`), and keeps the
 * claims of the valid ones; `delayMs` makes it a slow one.
 */
async function startRelyingParty() {
  const received: Array<{ claims: JWTPayload; at: number }> = [];
  const problems: string[] = [];
  let verify: ((token: string) => Promise<JWTPayload>) | undefined;
  const rp = await listen((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
      const token = body.get('logout_token');
      const check = async () => {
        if (req.method !== 'POST' || req.headers['content-type'] !== 'application/x-www-form-urlencoded' || !token) throw new Error('not a logout token POST');
        const claims = await verify!(token);
        received.push({ claims, at: Date.now() });
      };
      check().then(() => res.writeHead(200).end(), (err: Error) => {
        problems.push(err.message);
        res.writeHead(400).end();
      });
    });
  });
  return {
    url: `${rp.url}/backchannel-logout`,
    received,
    problems,
    trust(issuer: string, clientIds: () => string[]) {
      const jwks = createRemoteJWKSet(new URL(`${issuer}/login/oauth/jwks`));
      verify = async (token) => {
        const { payload, protectedHeader } = await jwtVerify(token, jwks, { issuer, audience: clientIds(), typ: 'logout+jwt', algorithms: ['RS256'], maxTokenAge: '2 minutes' });
        expect(protectedHeader.typ).to.equal('logout+jwt');
        if (!payload.events || typeof payload.events !== 'object' || !(EVENT in payload.events)) throw new Error('no back-channel logout event');
        expect((payload.events as Record<string, unknown>)[EVENT]).to.deep.equal({});
        if ('nonce' in payload) throw new Error('a logout token must not carry a nonce');
        if (typeof payload.sid !== 'string' || typeof payload.sub !== 'string') throw new Error('sid and sub expected');
        if (typeof payload.jti !== 'string' || typeof payload.iat !== 'number') throw new Error('jti and iat expected');
        return payload;
      };
    },
    /** The logout token for this session, waiting for it. */
    async logoutFor(sid: string, timeoutMs = 5000): Promise<JWTPayload> {
      await waitFor(async () => received.some((r) => r.claims.sid === sid), () => `no logout token for sid ${sid}; problems: ${problems.join('; ')}`, timeoutMs);
      return received.find((r) => r.claims.sid === sid)!.claims;
    },
    close: rp.close,
  };
}

/** A POST handler that answers only after `ms` (a receiver that hangs). */
async function startSlowReceiver(ms: number) {
  const slow = await listen((_req, res) => {
    setTimeout(() => res.writeHead(200).end(), ms).unref();
  });
  return { url: `${slow.url}/slow`, close: slow.close };
}

describeEachProfile('back-channel logout', (profile) => {
  const smtp = useMailServer();
  const rp = useHooks(startRelyingParty, (r) => r.close());
  const slow = useHooks(() => startSlowReceiver(10_000), (s) => s.close());
  const server = useIdp(profile, () => ({ SMTP_URL: smtp.url, MAIL_FROM: 'Horizon ID <id@example.test>', RATE_LIMIT_RESET_IP: 'off', METRICS_PORT: '0' }));
  let client: Client;
  let slowApp: { clientId: string; clientSecret: string };
  let downApp: { clientId: string; clientSecret: string };

  before(async () => {
    client = await makeClient(server.db);
    const owner = client.user;
    await updateApplication(server.db, server.idp.provider, await appAccess(server.db, owner.id, client.clientId), { backchannelLogoutURL: rp.url });
    const slowMade = await makeApp(server.db, owner.id, client.group.id, { name: 'Slow App' });
    await updateApplication(server.db, server.idp.provider, await appAccess(server.db, owner.id, slowMade.clientId), { backchannelLogoutURL: slow.url });
    slowApp = slowMade;
    const downMade = await makeApp(server.db, owner.id, client.group.id, { name: 'Down App' });
    await updateApplication(server.db, server.idp.provider, await appAccess(server.db, owner.id, downMade.clientId), { backchannelLogoutURL: `http://127.0.0.1:${await freePort()}/gone` });
    downApp = downMade;
    rp.trust(server.url, () => [client.clientId]);
  });

  /**
   * `person` signs in to the application through the real flow (openid scope) in `browser` (a new
   * one, signed in on the site first, unless given); the sid and sub of the ID token it got.
   */
  async function signInThroughApp(person: TestUser, browser?: Browser, app: { clientId: string; clientSecret: string } = client) {
    const b = browser ?? (await signIn(server.url, person));
    const redirectUri = client.redirectUri;
    const callback = await authorize(b, { clientId: app.clientId, redirectUri, scope: 'openid', extra: { nonce: `n-${Date.now()}` } }, person);
    const tokens = await tokenRequest(server.url, {
      form: { client_id: app.clientId, client_secret: app.clientSecret, code: callback.searchParams.get('code')!, redirect_uri: redirectUri },
    });
    expect(tokens.status, tokens.text).to.equal(200);
    const idToken = decodeJwt(String(tokens.body.id_token));
    return { browser: b, sid: String(idToken.sid), sub: String(idToken.sub) };
  }

  async function failedDeliveries(): Promise<number> {
    const text = await (await fetch(server.metricsUrl!)).text();
    const line = /^idp_backchannel_logouts_total\{result="failed"\} (\d+)/m.exec(text);
    return line ? Number(line[1]) : 0;
  }

  it('sends a valid logout token for the session when the person signs out on the site (POST /logout)', async () => {
    const person = await makeUser(server.db);
    const { browser, sid, sub } = await signInThroughApp(person);
    expect(sid, 'the ID token names the session (sid)').to.match(/^[\w-]+$/);
    await browser.fill(await browser.get('/account/settings/profile'), '/logout').expect(302);
    const claims = await rp.logoutFor(sid);
    expect(claims.sub).to.equal(sub);
    expect(claims.aud).to.equal(client.clientId);
    expect(claims.iss).to.equal(server.url);
    expect(claims.exp! - claims.iat!).to.be.at.most(120);
  });

  it('through the provider\'s own logout endpoint (RP-initiated logout)', async () => {
    const person = await makeUser(server.db);
    const { browser, sid } = await signInThroughApp(person);
    const page = await browser.get(`/login/oauth/logout?client_id=${client.clientId}`);
    const form = /<form id="op\.logoutForm" method="post" action="([^"]+)"><input type="hidden" name="xsrf" value="([^"]+)"\/>/.exec(page.text)!;
    await browser.postForm(form[1]!, { xsrf: form[2]!, logout: 'yes' }).expect(303);
    await rp.logoutFor(sid);
  });

  it('on Sign out all other sessions, for each other session and not the one that asked', async () => {
    const person = await makeUser(server.db);
    const kept = await signInThroughApp(person);
    const other = await signInThroughApp(person);
    const page = await kept.browser.get('/account/settings/sessions').expect(200);
    await kept.browser.fill(page, '/sign-out-others').expect(302);
    await rp.logoutFor(other.sid);
    await new Promise((r) => setTimeout(r, 200));
    expect(rp.received.some((r) => r.claims.sid === kept.sid), 'the session that stays signed in is not logged out').to.equal(false);
  });

  it('when one session is signed out from the Sessions page', async () => {
    const person = await makeUser(server.db);
    const first = await signInThroughApp(person);
    const before = new Set((await listSessionIndex(server.db, person.id)).map((row) => row.uid));
    const second = await signInThroughApp(person);
    const uid = (await listSessionIndex(server.db, person.id)).map((row) => row.uid).find((u) => !before.has(u))!;
    const page = await first.browser.get('/account/settings/sessions').expect(200);
    await first.browser.fill(page, `/sessions/${encodeURIComponent(uid)}/sign-out`).expect(302);
    await rp.logoutFor(second.sid);
  });

  it('when an administrator disables the account', async () => {
    const person = await makeUser(server.db);
    const { sid } = await signInThroughApp(person);
    const admin = await makeUser(server.db);
    await setSiteAdmin(server.db, CLI, admin, true);
    const site = await signIn(server.url, admin);
    const confirm = await site.get(`/admin/users/${person.id}/disable`).expect(200);
    await site.fill(confirm, `/admin/users/${person.id}/disable`).expect(302);
    await rp.logoutFor(sid);
  });

  it('when the password is reset through the mailed link', async () => {
    const person = await makeUser(server.db);
    const { sid } = await signInThroughApp(person);
    const other = new Browser(server.url);
    const forgot = await other.get('/forgot-password').expect(200);
    await other.fill(forgot, '/forgot-password', { Email: person.email }).expect(302);
    const link = linkIn(await smtp.next(person.email), server.url);
    const resetPage = await other.get(link).expect(200);
    await other.fill(resetPage, '/reset-password', { 'New password': NEW_PASSWORD, 'New password again': NEW_PASSWORD }).expect(302);
    await rp.logoutFor(sid);
  });

  it('when the account is deleted', async () => {
    const person = await makeUser(server.db);
    const { browser, sid, sub } = await signInThroughApp(person);
    const page = await browser.get('/account/settings/delete').expect(200);
    await browser.fill(page, '/account/settings/delete', { 'Your password': person.password }).expect(302, '/account/deleted');
    expect((await rp.logoutFor(sid)).sub).to.equal(sub);
  });

  it('does not delay or break the sign-out when a receiver is slow or down; the failures are counted', async () => {
    const person = await makeUser(server.db);
    const { browser, sid } = await signInThroughApp(person);
    await signInThroughApp(person, browser, slowApp);
    await signInThroughApp(person, browser, downApp);
    const failedBefore = await failedDeliveries();
    const started = Date.now();
    await browser.fill(await browser.get('/account/settings/profile'), '/logout').expect(302);
    expect(Date.now() - started, 'the sign-out waits for no receiver').to.be.below(1000);
    expect((await browser.get('/account/settings/profile')).status, 'signed out').to.equal(302);
    // The working application is told at once, whatever the others do.
    const claims = await rp.logoutFor(sid, 2000);
    expect(claims.aud).to.equal(client.clientId);
    // The refused connection and the timed-out one (2.5 s) are both counted.
    await waitFor(async () => (await failedDeliveries()) >= failedBefore + 2, () => 'two failed deliveries expected', 8000);
  });

  it('sends nothing to an application without a back-channel logout URL', async () => {
    const plain = await makeClient(server.db);
    const person = await makeUser(server.db);
    const { browser } = await signInThroughApp(person, undefined, plain);
    const count = rp.received.length;
    await browser.fill(await browser.get('/account/settings/profile'), '/logout').expect(302);
    await new Promise((r) => setTimeout(r, 300));
    expect(rp.received.length).to.equal(count);
  });
});
