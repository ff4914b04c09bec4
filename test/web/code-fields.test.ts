import { expect } from 'chai';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { Browser, signIn, type Page } from '../helpers/browser.js';
import { makeUser } from '../helpers/factories.js';
import { withTwoFactor } from '../helpers/totp.js';

/** The `<input>` tag named `name` on the page, its attributes as written. */
function inputTag(page: Page, name: string): string {
  const tag = new RegExp(`<input\\b[^>]*\\sname="${name}"[^>]*>`).exec(page.text)?.[0];
  if (!tag) throw new Error(`no input named ${name} on ${page.url.pathname}`);
  return tag.replace(/\s+/g, ' ');
}

/**
 * Code fields as phones and password managers expect them: the code offered from a message or an
 * authenticator (one-time-code), the digits keypad where the code is only digits, the cursor in
 * the field on a page that asks for nothing else first.
 */
describeEachProfile('Pages: code fields', (profile) => {
  const idp = useIdp(profile);

  it('the sign-in code step (a code or a recovery code): one-time-code, focused, any keyboard', async () => {
    const user = await makeUser(idp.db);
    await withTwoFactor(idp.db, user);
    const browser = new Browser(idp.url);
    await browser.get('/login').expect(200);
    await browser.submit('/login', { login: user.username, password: user.password }).expect(302, /^\/login\/two-factor/);
    const tag = inputTag(await browser.get('/login/two-factor').expect(200), 'code');
    expect(tag).to.include('autocomplete="one-time-code"').and.include(' autofocus');
    // Recovery codes have letters: no digits-only keypad.
    expect(tag).not.to.include('inputmode');
  });

  it('setting up the authenticator app (six digits): one-time-code, numeric, focused', async () => {
    const browser = await signIn(idp.url, await makeUser(idp.db));
    const base = '/account/settings/two-factor';
    await browser.fill(await browser.get(base).expect(200), `${base}/setup`).expect(302, `${base}/setup`);
    const tag = inputTag(await browser.get(`${base}/setup`).expect(200), 'code');
    expect(tag).to.include('autocomplete="one-time-code"').and.include('inputmode="numeric"').and.include(' autofocus');
  });

  it('the device code (letters): one-time-code and focused', async () => {
    const browser = await signIn(idp.url, await makeUser(idp.db));
    const tag = inputTag(await browser.get('/login/device').expect(200), 'user_code');
    expect(tag).to.include('autocomplete="one-time-code"').and.include(' autofocus').and.not.include('inputmode');
  });
});
