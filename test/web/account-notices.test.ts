import { randomBytes } from 'node:crypto';
import type { ParsedMail } from 'mailparser';
import { expect } from 'chai';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { Browser, signIn } from '../helpers/browser.js';
import { makeUser } from '../helpers/factories.js';
import { filled, formOf } from '../helpers/html.js';
import { linkIn, useMailServer } from '../helpers/smtp.js';

const unique = () => randomBytes(4).toString('hex');
const SAFARI = 'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15';
const NEW_PASSWORD = 'a brand new passphrase';

/**
 * Security notices of the account pages: a password changed (Account settings → Password), a
 * password reset (through its link), an address changed (to the old address). Each arrives by
 * SMTP and says what happened, when, from which browser and address, and what to do if it was
 * not the owner.
 */
describeEachProfile('security notices of password and e-mail changes', (profile) => {
  const smtp = useMailServer();
  const idp = useIdp(profile, () => ({ SMTP_URL: smtp.url, RATE_LIMIT_RESET_IP: 'off' }));

  /** Checks the notice's what, when (within the test's span), browser, address and advice. */
  function expectNotice(mail: ParsedMail, subject: string, what: string, since: number): void {
    expect(mail.subject).to.equal(subject);
    const text = mail.text ?? '';
    expect(text).to.include(what);
    const when = Date.parse(/When: +(.+)/.exec(text)![1]!.replace(' UTC', ' GMT'));
    expect(when).to.be.within(Math.floor(since / 1000) * 1000, Date.now() + 1000);
    expect(text).to.include('Browser: Safari on macOS');
    expect(text).to.include('Address: 127.0.0.1');
    expect(text).to.include(`Reset your password now: ${idp.url}/forgot-password`);
    expect(mail.html).to.include(what.replace(/"/g, '&#34;'));
  }

  it('Account settings → Password mails a notice to the address', async () => {
    const user = await makeUser(idp.db);
    const browser = await signIn(new Browser(idp.url, { userAgent: SAFARI }), user);
    const since = Date.now();
    const page = await browser.get('/account/settings/password').expect(200);
    const form = formOf(page.text, '/account/settings/password');
    await browser.postForm(form.action, filled(form, { current_password: user.password, password: NEW_PASSWORD, password_confirmation: NEW_PASSWORD })).expect(302);
    expectNotice(await smtp.nextWith(user.email, 'Your password was changed'), 'Your password was changed', 'The password of your account was changed.', since);
  });

  it('a reset through the mailed link mails a notice to the address', async () => {
    const user = await makeUser(idp.db);
    const browser = new Browser(idp.url, { userAgent: SAFARI });
    const forgot = await browser.get('/forgot-password').expect(200);
    const forgotForm = formOf(forgot.text, '/forgot-password');
    await browser.postForm(forgotForm.action, filled(forgotForm, { email: user.email })).expect(302);
    const link = linkIn(await smtp.nextWith(user.email, 'Reset your password'), idp.url);
    const since = Date.now();
    const page = await browser.get(link).expect(200);
    const form = formOf(page.text, '/reset-password');
    await browser.postForm(form.action, filled(form, { password: NEW_PASSWORD, password_confirmation: NEW_PASSWORD })).expect(302);
    expectNotice(await smtp.nextWith(user.email, 'Your password was reset'), 'Your password was reset', 'The password of your account was reset through a link sent to this address.', since);
  });

  it('a changed address mails the notice to the old address, naming the new one', async () => {
    const user = await makeUser(idp.db);
    const browser = await signIn(new Browser(idp.url, { userAgent: SAFARI }), user);
    const email = `new-${unique()}@example.test`;
    const page = await browser.get('/account/settings/profile').expect(200);
    const form = formOf(page.text, '/account/settings/profile');
    await browser.postForm(form.action, filled(form, { email, current_password: user.password })).expect(302);
    const link = linkIn(await smtp.nextWith(email, 'Confirm your new e-mail address'), idp.url);
    const since = Date.now();
    await browser.get(link).expect(302);
    expectNotice(await smtp.nextWith(user.email, 'Your e-mail address was changed'), 'Your e-mail address was changed', `The e-mail address of your account was changed to ${email}.`, since);
    expect(smtp.countTo(email)).to.equal(1);
  });
});
