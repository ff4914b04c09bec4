import { expect } from 'chai';
import { spendChallenge } from '../../src/db/passkeys.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { signIn, visit, type Browser } from '../helpers/browser.js';
import { makeUser, type TestUser } from '../helpers/factories.js';
import { fieldError } from '../helpers/html.js';
import { withClockAhead } from '../helpers/oauth.js';
import { atMidStep, codeFor } from '../helpers/totp.js';

const BASE = '/account/settings/two-factor';

/** The secret the set-up page shows (grouped in fours for reading). */
function secretOn(html: string): string {
  const shown = /data-testid="totp-secret">([A-Z2-7 ]+)</.exec(html)?.[1];
  if (!shown) throw new Error('no TOTP secret on the page');
  return shown.replace(/ /g, '');
}

function codesOn(html: string): string[] {
  return [...html.matchAll(/<li><code>([a-z0-9]{5}-[a-z0-9]{5})<\/code><\/li>/g)].map((m) => m[1]!);
}

/** Sets up the app for a signed-in browser; returns the secret and the recovery codes. */
async function turnOn(browser: Browser): Promise<{ secret: string; codes: string[] }> {
  const status = await browser.get(BASE).expect(200);
  await browser.fill(status, `${BASE}/setup`).expect(302, `${BASE}/setup`);
  const page = await browser.get(`${BASE}/setup`).expect(200);
  const secret = secretOn(page.text);
  await browser.fill(page, `${BASE}/setup/confirm`, { 'Code from your app': await codeFor(secret) }).expect(302, `${BASE}/recovery-codes`);
  const done = await browser.get(`${BASE}/recovery-codes`).expect(200);
  return { secret, codes: codesOn(done.text) };
}

/**
 * Opens the page of the form posting to `action` (Recovery codes for new codes, the status page to
 * turn it off) and sends it with `code` typed into its field; expects `status`.
 */
async function submitCode(browser: Browser, action: string, code: string, status: number, location?: string) {
  const page = await browser.get(action === `${BASE}/recovery-codes` ? action : BASE).expect(200);
  return browser.fill(page, action, { 'Code from your app': code }).expect(status, location);
}

describeEachProfile('Account settings: two-factor authentication', (profile) => {
  const idp = useIdp(profile);
  let user: TestUser;
  let browser: Browser;

  beforeEach(async () => {
    user = await makeUser(idp.db);
    browser = await signIn(idp.url, user);
  });

  it('sets up an authenticator app from the QR code page with a code the app computes, and shows ten recovery codes once', async () => {
    await atMidStep(async () => {
      const status = await browser.get(BASE).expect(200);
      expect(status.text).to.include('Set up an authenticator app');
      await browser.fill(status, `${BASE}/setup`).expect(302, `${BASE}/setup`);
      const setup = await browser.get(`${BASE}/setup`).expect(200);
      expect(setup.text).to.match(/<img src="data:image\/svg\+xml;base64,[A-Za-z0-9+/=]+" alt="QR code/);
      const secret = secretOn(setup.text);
      expect(secret).to.match(/^[A-Z2-7]{16,}$/);
      // Reloading the set-up page keeps the same secret: the app scanned it already.
      expect(secretOn((await browser.get(`${BASE}/setup`).expect(200)).text)).to.equal(secret);

      await browser.fill(setup, `${BASE}/setup/confirm`, { 'Code from your app': await codeFor(secret) }).expect(302, `${BASE}/recovery-codes`);
      const done = await browser.get(`${BASE}/recovery-codes`).expect(200);
      const codes = codesOn(done.text);
      expect(codes).to.have.length(10);
      expect(new Set(codes).size).to.equal(10);
      expect(done.headers.get('cache-control')).to.include('no-store');
      // Shown once: a reload (or Back) finds the page without them, saying how many are left and since when.
      const again = await browser.get(`${BASE}/recovery-codes`).expect(200);
      expect(codesOn(again.text)).to.deep.equal([]);
      for (const code of codes) expect(again.text).not.to.include(code);
      expect(again.text).to.include('data-testid="recovery-codes-left">10<');
      const madeAt = (await idp.db('recovery_codes').where({ user_id: user.id }).first('created_at')).created_at;
      expect(again.text).to.include(`<time datetime="${new Date(madeAt).toISOString()}">`);

      const on = await browser.get(BASE).expect(200);
      expect(on.text).to.include('On');
      expect(on.text).to.include('data-testid="recovery-codes-left">10<');
      for (const code of codes) expect(on.text).not.to.include(code);
      // Stored: the secret only sealed or as given, the codes only as digests.
      const stored = await idp.db('recovery_codes').where({ user_id: user.id }).select('digest');
      expect(stored.map((r) => r.digest)).to.have.length(10);
      for (const code of codes) expect(JSON.stringify(stored)).not.to.include(code);
    });
  });

  it('refuses a wrong code at set-up and keeps the same QR code', async () => {
    await browser.fill(await browser.get(BASE).expect(200), `${BASE}/setup`).expect(302);
    const setup = await browser.get(`${BASE}/setup`).expect(200);
    const secret = secretOn(setup.text);
    const right = await codeFor(secret);
    const wrong = right === '000000' ? '111111' : '000000';
    const page = await browser.fill(setup, `${BASE}/setup/confirm`, { 'Code from your app': wrong }).expect(400);
    expect(fieldError(page.text, 'code')).to.match(/not right/);
    expect(secretOn(page.text)).to.equal(secret);
    expect((await browser.get(BASE).expect(200)).text).to.include('Continue setting up');
  });

  it('accepts the code of the step before (clock drift) but not one two steps ahead', async () => {
    await atMidStep(async () => {
      await browser.fill(await browser.get(BASE).expect(200), `${BASE}/setup`).expect(302);
      const setup = await browser.get(`${BASE}/setup`).expect(200);
      const secret = secretOn(setup.text);
      const far = await browser.fill(setup, `${BASE}/setup/confirm`, { 'Code from your app': await codeFor(secret, 2) }).expect(400);
      expect(fieldError(far.text, 'code')).to.match(/not right/);
      await browser.fill(far, `${BASE}/setup/confirm`, { 'Code from your app': await codeFor(secret, -1) }).expect(302);
    });
  });

  it('turning it off needs a fresh code: the code used to turn it on is refused, a recovery code works once', async () => {
    await atMidStep(async () => {
      const { secret, codes } = await turnOn(browser);
      const replayed = await submitCode(browser, `${BASE}/disable`, await codeFor(secret), 400);
      expect(fieldError(replayed.text, 'disable_code')).to.match(/not right|used already/);
      const wrong = await submitCode(browser, `${BASE}/recovery-codes`, 'aaaaa-aaaaa', 400);
      expect(fieldError(wrong.text, 'regenerate_code'), 'the error beside the form on Recovery codes').to.match(/not right/);
      expect(wrong.text).to.include('data-testid="recovery-codes-left">10<');

      // Regenerating with a recovery code spends it; the old set stops working.
      await submitCode(browser, `${BASE}/recovery-codes`, codes[0]!.toUpperCase(), 302, `${BASE}/recovery-codes`);
      const fresh = codesOn((await browser.get(`${BASE}/recovery-codes`).expect(200)).text);
      expect(fresh).to.have.length(10);
      const old = await submitCode(browser, `${BASE}/disable`, codes[1]!, 400);
      expect(fieldError(old.text, 'disable_code')).to.match(/not right/);

      await submitCode(browser, `${BASE}/disable`, fresh[0]!, 302, `${BASE}?notice=disabled`);
      expect((await browser.get(BASE).expect(200)).text).to.include('Set up an authenticator app');
      expect(await idp.db('user_totp').where({ user_id: user.id }).first()).to.equal(undefined);
      expect(await idp.db('recovery_codes').where({ user_id: user.id }).first()).to.equal(undefined);
      const trail = await idp.db('audit_events').where({ target: user.username }).orderBy('id').pluck('action');
      expect(trail).to.include.members(['user.two_factor.enable', 'user.two_factor.recovery_codes', 'user.two_factor.disable']);
    });
  });

  it('turns it off and makes new recovery codes with a code from the app typed into each form', async () => {
    await atMidStep(async () => {
      const { secret } = await turnOn(browser);
      // The next step's code: the one that turned it on is spent.
      await withClockAhead(30_000, async () => {
        await submitCode(browser, `${BASE}/recovery-codes`, await codeFor(secret), 302, `${BASE}/recovery-codes`);
        expect(codesOn((await browser.get(`${BASE}/recovery-codes`).expect(200)).text)).to.have.length(10);
      });
      await withClockAhead(60_000, async () => {
        await submitCode(browser, `${BASE}/disable`, await codeFor(secret), 302, `${BASE}?notice=disabled`);
      });
      expect(await idp.db('user_totp').where({ user_id: user.id }).first()).to.equal(undefined);
    });
  });

  it('of 16 parallel uses of one recovery code exactly one is accepted', async () => {
    const { codes } = await turnOn(browser);
    const page = await browser.get(`${BASE}/recovery-codes`).expect(200);
    const answers = await Promise.all(Array.from({ length: 16 }, () => browser.fill(page, `${BASE}/recovery-codes`, { 'Code from your app': codes[3]! })));
    expect(answers.filter((a) => a.status === 302)).to.have.length(1);
    // The others are wrong codes now, counted like wrong passwords: refused, or past the limit, 429.
    expect(answers.filter((a) => a.status !== 302).map((a) => a.status)).to.satisfy((all: number[]) => all.every((s) => s === 400 || s === 429));
  });

  it('refuses a post without the CSRF token, and sends a signed-out visitor to sign in', async () => {
    // Without two-factor on there are no recovery codes to speak of: the status page.
    await browser.get(`${BASE}/recovery-codes`).expect(302, BASE);
    const res = await browser.postForm(`${BASE}/setup`, {});
    expect(res.status).to.equal(403);
    expect(await idp.db('user_totp').where({ user_id: user.id }).first()).to.equal(undefined);
    const visitor = await visit(idp.url);
    await visitor.get(BASE).expect(302, `/login?return_to=${encodeURIComponent(BASE)}`);
  });
});

describeEachProfile('Account settings: two-factor authentication with KEYS_SECRET', (profile) => {
  const idp = useIdp(profile, { KEYS_SECRET: 'a-test-secret-of-at-least-32-characters' });

  it('stores the TOTP secret sealed, and still checks codes with it', async () => {
    const user = await makeUser(idp.db);
    const browser = await signIn(idp.url, user);
    await atMidStep(async () => {
      const { secret } = await turnOn(browser);
      const row = await idp.db('user_totp').where({ user_id: user.id }).first('secret');
      expect(row.secret).to.match(/^enc:v1:/);
      expect(row.secret).not.to.include(secret);
    });
    expect((await browser.get(BASE).expect(200)).text).to.include('data-testid="recovery-codes-left">10<');
  });
});

describeEachProfile('Passkey challenges', (profile) => {
  const idp = useIdp(profile);

  it('answer once: of 16 parallel spends of one challenge exactly one succeeds', async () => {
    const expires = new Date(Date.now() + 60_000).toISOString();
    const spent = await Promise.all(Array.from({ length: 16 }, () => spendChallenge(idp.db, 'a'.repeat(64), expires)));
    expect(spent.filter(Boolean)).to.have.length(1);
  });
});
