import { expect } from 'chai';
import * as client from 'openid-client';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { setSiteAdmin } from '../../src/services/admin.js';
import { Browser, signIn, visit } from '../helpers/browser.js';
import { makeClient, makeUser, type TestUser } from '../helpers/factories.js';
import { fieldError } from '../helpers/html.js';
import { authorize, withClockAhead } from '../helpers/oauth.js';
import { atMidStep, codeFor, withTwoFactor } from '../helpers/totp.js';

const REDIRECT_URI = 'http://127.0.0.1:9999/openid-client/callback';

describeEachProfile('Sign-in with two-factor authentication', (profile) => {
  const idp = useIdp(profile);
  let user: TestUser;
  let secret: string;
  let codes: string[];

  beforeEach(async () => {
    user = await makeUser(idp.db);
    ({ secret, codes } = await withTwoFactor(idp.db, user));
  });

  /** The password step of the site's sign-in: it leads to the code page, and signs in nobody yet. */
  async function passwordStep(browser: Browser, returnTo = '/account/settings/profile') {
    await browser.get(`/login?return_to=${encodeURIComponent(returnTo)}`).expect(200);
    await browser.submit('/login', { login: user.username, password: user.password, return_to: returnTo }).expect(302, `/login/two-factor?return_to=${encodeURIComponent(returnTo)}`);
    await browser.get('/groups').expect(302, '/login?return_to=%2Fgroups');
    const page = await browser.get(`/login/two-factor?return_to=${encodeURIComponent(returnTo)}`).expect(200);
    expect(page.text).to.include('Authentication code');
    expect(page.headers.get('cache-control')).to.include('no-store');
  }

  it('asks for a code after the password; a wrong code is refused, the right one signs in where the person was going', async () => {
    await atMidStep(async () => {
      const browser = new Browser(idp.url);
      await passwordStep(browser);
      const wrong = await browser.submit('/login/two-factor', { code: '000000', return_to: '/account/settings/profile' });
      expect(wrong.status).to.equal(400);
      expect(fieldError(wrong.text, 'code')).to.match(/not right/);
      await browser.submit('/login/two-factor', { code: await codeFor(secret), return_to: '/account/settings/profile' }).expect(302, '/account/settings/profile');
      await browser.get('/groups').expect(200);
    }, 1);
  });

  it('accepts each app code once: the same code cannot sign in a second browser', async () => {
    await atMidStep(async () => {
      const code = await codeFor(secret);
      const first = new Browser(idp.url);
      await passwordStep(first);
      await first.submit('/login/two-factor', { code }).expect(302);
      const second = new Browser(idp.url);
      await passwordStep(second);
      const replay = await second.submit('/login/two-factor', { code });
      expect(replay.status).to.equal(400);
      await second.get('/groups').expect(302);
    }, 1);
  });

  it('signs in once with a recovery code, typed in capitals with spaces; the code is then spent', async () => {
    const browser = new Browser(idp.url);
    await passwordStep(browser);
    await browser.submit('/login/two-factor', { code: ` ${codes[2]!.toUpperCase()} ` }).expect(302);
    const again = new Browser(idp.url);
    await passwordStep(again);
    expect((await again.submit('/login/two-factor', { code: codes[2]! })).status).to.equal(400);
  });

  it('without the password step, or after five minutes, or with a forged cookie, the code page sends the browser to sign in again', async () => {
    const stranger = await visit(idp.url);
    await stranger.get('/login/two-factor').expect(302, '/login');
    await stranger.submit('/login/two-factor', { code: codes[0]! }).expect(302, '/login');

    const late = new Browser(idp.url);
    await passwordStep(late);
    await withClockAhead(6 * 60_000, () => late.submit('/login/two-factor', { code: codes[0]! }).expect(302, '/login'));

    // A cookie naming another waiting sign-in (the signature no longer matches) is no cookie at all.
    const forger = new Browser(idp.url);
    await passwordStep(forger);
    const jar = forger.cookies();
    const name = [...jar.keys()].find((k) => k.includes('2fa') && !k.endsWith('.sig'))!;
    const altered = jar.get(name)!.replace(/\.[A-Za-z0-9_-]+$/, `.${'A'.repeat(43)}`);
    expect(altered).not.to.equal(jar.get(name));
    jar.set(name, altered);
    await forger.submit('/login/two-factor', { code: codes[0]! }).expect(302, '/login');
    await forger.get('/groups').expect(302);
  });

  it('counts wrong codes against the sign-in limits, across waiting sign-ins: past them, 429 with Retry-After', async () => {
    const browser = new Browser(idp.url);
    let last = 0;
    for (let i = 0; i < 12 && last !== 429; i += 1) {
      // Every fifth wrong code spends the waiting sign-in: the password starts a new one.
      if (i % 5 === 0) await passwordStep(browser);
      const res = await browser.submit('/login/two-factor', { code: '000000' });
      last = res.status;
      if (res.status === 429) expect(Number(res.headers.get('retry-after'))).to.be.greaterThan(0);
    }
    expect(last).to.equal(429);
  });

  it('in the authorization flow asks for the code after the password, and the ID token says how (amr, and acr when asked) as openid-client reads it', async () => {
    const app = await makeClient(idp.db, { redirectUri: REDIRECT_URI, user });
    const config = await client.discovery(new URL(idp.url), app.clientId, app.clientSecret, undefined, { execute: [client.allowInsecureRequests] });
    const verifier = client.randomPKCECodeVerifier();
    const nonce = client.randomNonce();
    const url = client.buildAuthorizationUrl(config, { redirect_uri: REDIRECT_URI, scope: 'openid', code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', nonce, state: 's', acr_values: '2' });
    const extra = Object.fromEntries([...url.searchParams].filter(([k]) => ['code_challenge', 'code_challenge_method', 'nonce', 'acr_values'].includes(k)));
    const callback = await atMidStep(
      () => authorize(new Browser(idp.url), { clientId: app.clientId, redirectUri: REDIRECT_URI, scope: 'openid', extra, state: 's' }, user, () => codeFor(secret)),
      1,
    );
    const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedNonce: nonce, expectedState: 's' });
    expect(tokens.claims()!.amr).to.deep.equal(['pwd', 'otp', 'mfa']);
    // Asked for with acr_values: two factors were used.
    expect(tokens.claims()!.acr).to.equal('2');
  });

  it('in the authorization flow, a password alone reaches neither consent nor the callback', async () => {
    const app = await makeClient(idp.db, { user });
    const browser = new Browser(idp.url);
    const err = await authorize(browser, { clientId: app.clientId, redirectUri: app.redirectUri }, user).catch((e: Error) => e);
    expect(String(err)).to.match(/asked for a second factor/);
  });
});

describeEachProfile('Admin: Reset two-factor', (profile) => {
  const idp = useIdp(profile);

  it('turns off a person’s two-factor authentication: they then sign in with the password alone; audited', async () => {
    const admin = await makeUser(idp.db);
    await setSiteAdmin(idp.db, { userId: 0, ip: null, admin: true }, admin, true);
    const person = await makeUser(idp.db);
    await withTwoFactor(idp.db, person);
    const site = await signIn(idp.url, admin);
    const page = await site.get(`/admin/users/${person.id}`).expect(200);
    expect(page.text).to.include('Reset two-factor');
    await site.submit(`/admin/users/${person.id}/two-factor-reset`).expect(302, `/admin/users/${person.id}?notice=two-factor-reset`);
    expect((await site.get(`/admin/users/${person.id}`).expect(200)).text).to.include('data-testid="two-factor-off"');
    await signIn(idp.url, person);
    const trail = await idp.db('audit_events').where({ target: person.username, action: 'user.two_factor.reset' }).first('actor_id');
    expect(trail.actor_id).to.equal(admin.id);
    // Again: nothing to reset, and nothing recorded.
    await site.submit(`/admin/users/${person.id}/two-factor-reset`).expect(302, `/admin/users/${person.id}?notice=two-factor-off`);
  });
});
