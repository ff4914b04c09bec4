import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { insertPasskey } from '../../src/db/passkeys.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { Browser, type Page, type Pending } from '../helpers/browser.js';
import { makeClient, makeUser, type TestUser } from '../helpers/factories.js';
import { fieldError, filledForm } from '../helpers/html.js';
import { authorizeUrl } from '../helpers/oauth.js';
import { atMidStep, codeFor, withTwoFactor } from '../helpers/totp.js';

/**
 * Guessing a second factor. The guesses come from addresses of different /64 networks (with
 * TRUST_PROXY=1, from X-Forwarded-For), so no per-address limit is what stops them: the waiting
 * sign-in's own five tries are, and the account's limits across addresses.
 */

/** The first address of the i-th /64 of a documentation prefix. */
const networkAddress = (i: number) => `2001:db8:${(i >> 16).toString(16)}:${(i & 0xffff).toString(16)}::1`;

/** Six-digit codes none of which is the app's code of this step or the steps beside it. */
async function wrongCodes(secret: string, count: number): Promise<string[]> {
  const right = new Set([await codeFor(secret, -1), await codeFor(secret), await codeFor(secret, 1)]);
  const codes: string[] = [];
  while (codes.length < count) {
    const code = String(randomBytes(4).readUInt32BE() % 1_000_000).padStart(6, '0');
    if (!right.has(code)) codes.push(code);
  }
  return codes;
}

/** Signs in with the password through the site's form; the browser is then on the code page, whose form it returns. */
async function passwordStep(browser: Browser, user: TestUser): Promise<{ action: string; fields: Record<string, string> }> {
  const login = await browser.get('/login').expect(200);
  const password = filledForm(login.text, '/login', { login: user.username, password: user.password });
  const next = await browser.postForm(password.action, password.fields).expect(302);
  const page = await browser.get(next.headers.get('location')!).expect(200);
  return filledForm(page.text, '/login/two-factor');
}

function postFrom(browser: Browser, address: string, action: string, fields: Record<string, string>): Pending {
  return browser.request(action, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': address },
    body: new URLSearchParams(fields).toString(),
  });
}

const isWrongCode = (page: Page) => page.status === 400 && /not right/.test(fieldError(page.text, 'code') ?? '');
const isSpent = (page: Page) => page.status === 401 && /Too many wrong codes\. Enter your password again/.test(fieldError(page.text, 'login') ?? '');

describeEachProfile('second-factor guessing', (profile) => {
  const idp = useIdp(profile, { TRUST_PROXY: '1' });

  it('checks at most 5 of 1,000 codes sent at once for one waiting sign-in, from 1,000 networks; the right code after them does not sign in', async () => {
    const user = await makeUser(idp.db);
    const { secret } = await withTwoFactor(idp.db, user);
    await atMidStep(async () => {
      const browser = new Browser(idp.url);
      const form = await passwordStep(browser, user);
      const cookies = new Map(browser.cookies());
      const codes = await wrongCodes(secret, 1000);
      const answers = await Promise.all(codes.map((code, i) => postFrom(browser, networkAddress(i), form.action, { ...form.fields, code })));
      const checked = answers.filter(isWrongCode).length;
      const tally = answers.reduce<Record<number, number>>((t, a) => ({ ...t, [a.status]: (t[a.status] ?? 0) + 1 }), {});
      expect(checked, JSON.stringify(tally)).to.be.within(1, 5);
      expect(answers.filter(isSpent).length, JSON.stringify(tally)).to.equal(1000 - checked);

      // The attacker kept the cookie the spent sign-in had: the right code is refused with it too.
      for (const [name, value] of cookies) browser.cookies().set(name, value);
      const late = await postFrom(browser, networkAddress(5000), form.action, { ...form.fields, code: await codeFor(secret) });
      expect(isSpent(late), `${late.status} ${late.text.slice(0, 200)}`).to.equal(true);
      await browser.get('/groups').expect(302, '/login?return_to=%2Fgroups');

      // The person enters the password again, and the right code signs in.
      const again = await passwordStep(browser, user);
      await postFrom(browser, networkAddress(5001), again.action, { ...again.fields, code: await codeFor(secret) }).expect(302);
      await browser.get('/groups').expect(200);
    }, 1);
  });

  it('spends the waiting sign-in at the fifth wrong code: the page asks for the password again', async () => {
    const user = await makeUser(idp.db);
    const { secret } = await withTwoFactor(idp.db, user);
    await atMidStep(async () => {
      const browser = new Browser(idp.url);
      const form = await passwordStep(browser, user);
      const codes = await wrongCodes(secret, 5);
      for (const code of codes.slice(0, 4)) expect(isWrongCode(await postFrom(browser, networkAddress(1), form.action, { ...form.fields, code }))).to.equal(true);
      const fifth = await postFrom(browser, networkAddress(1), form.action, { ...form.fields, code: codes[4]! });
      expect(isSpent(fifth), fifth.text.slice(0, 300)).to.equal(true);
      // The page is the sign-in form, and the browser no longer holds a waiting sign-in.
      expect(filledForm(fifth.text, '/login', { login: user.username, password: user.password }).action).to.equal('/login');
      await browser.get('/login/two-factor').expect(302, '/login');
    }, 1);
  });

  it('in the authorization flow, spends the waiting sign-in at the fifth wrong code and asks for the password again', async () => {
    const app = await makeClient(idp.db);
    const { secret } = await withTwoFactor(idp.db, app.user);
    await atMidStep(async () => {
      const browser = new Browser(idp.url);
      const login = await browser.follow(authorizeUrl(idp.url, { ...app, state: 's' }));
      const password = filledForm(login.text, '/login', { login: app.user.username, password: app.user.password });
      const challenge = await browser.follow(await browser.postForm(password.action, password.fields));
      const form = filledForm(challenge.text, '/two-factor');
      const codes = await wrongCodes(secret, 5);
      for (const code of codes.slice(0, 4)) expect(isWrongCode(await browser.postForm(form.action, { ...form.fields, code }))).to.equal(true);
      const fifth = await browser.postForm(form.action, { ...form.fields, code: codes[4]! });
      expect(isSpent(fifth), fifth.text.slice(0, 300)).to.equal(true);
      // The flow's own sign-in form, which starts over: the password leads to the code page again.
      const again = filledForm(fifth.text, '/login', { login: app.user.username, password: app.user.password });
      expect(again.action).to.equal(password.action);
      const next = await browser.follow(await browser.postForm(again.action, again.fields));
      expect(filledForm(next.text, '/two-factor').action).to.equal(form.action);
    }, 1);
  });

  it('counts passkey answers before verifying them: of 16 sent at once from one address, at most 5 are verified', async () => {
    const user = await makeUser(idp.db);
    const credentialId = randomBytes(16).toString('base64url');
    await insertPasskey(idp.db, { userId: user.id, credentialId, publicKey: randomBytes(65).toString('base64url'), counter: 0, transports: '', name: 'key', at: new Date().toISOString() });
    const address = networkAddress(77);
    const answers = await Promise.all(
      Array.from({ length: 16 }, async () => {
        const browser = new Browser(idp.url, { headers: { 'x-forwarded-for': address } });
        const login = await browser.get('/login').expect(200);
        const form = filledForm(login.text, '/login/passkey');
        // What views/static/passkeys.js asks before the authenticator answers.
        await browser.postForm('/passkeys/options', { _csrf: form.fields._csrf!, purpose: 'sign-in', uid: '' }).expect(200);
        const forged = JSON.stringify({ id: credentialId, rawId: credentialId, type: 'public-key', response: { clientDataJSON: 'e30', authenticatorData: 'AAAA', signature: 'AAAA' }, clientExtensionResults: {} });
        return browser.postForm(form.action, { ...form.fields, response: forged });
      }),
    );
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 400).length, statuses.join(' ')).to.be.within(1, 5);
    expect(statuses.filter((s) => s !== 400).every((s) => s === 429), statuses.join(' ')).to.equal(true);
  });
});
