import { expect } from 'chai';
import { useIdp } from '../helpers/app.js';
import { Browser, signIn } from '../helpers/browser.js';
import { makeUser } from '../helpers/factories.js';
import { fieldError, formOf } from '../helpers/html.js';
import { expectIn, expectNoEnglish, textOf } from '../helpers/i18n-pages.js';
import { linkIn, useMailServer } from '../helpers/smtp.js';
import { TRANSLATED_VIEWS, translator, type Language } from '../../src/i18n.js';

describe('Recovering an account and verifying an address in the reader\'s language', function () {
  this.timeout(30_000);
  const smtp = useMailServer();
  const idp = useIdp('sqlite', () => ({ SMTP_URL: smtp.url }));

  it('mails the reset link in English when the page was English', async () => {
    const user = await makeUser(idp.db);
    const browser = new Browser(idp.url, { headers: { 'accept-language': 'fr' } });
    await browser.fill(await browser.get('/forgot-password').expect(200), '/forgot-password', { Email: user.email }).expect(302);
    const mail = await smtp.nextWith(user.email, 'Reset your password');
    expect(mail.html).to.include('<html lang="en">');
    expect(mail.text).to.include('Someone (we hope you) asked to reset the password of your account.');
  });

  it('lists the pages of recovering an account and verifying an address as translated', () => {
    for (const view of ['password-reset/forgot', 'password-reset/sent', 'password-reset/reset', 'verify-email/sent', 'verify-email/outdated', 'verify-email/done', 'signup/sent']) expect(TRANSLATED_VIEWS.has(view), view).to.equal(true);
  });

  for (const lang of ['de', 'ja'] as Language[]) {
    it(`asks for a password reset in ${lang}, says a bad address is bad in ${lang}, and that the link is sent`, async () => {
      const t = translator(lang);
      const browser = new Browser(idp.url, { headers: { 'accept-language': lang } });
      const forgot = await browser.get('/forgot-password').expect(200);
      expectIn(forgot, lang);
      expect(textOf(forgot)).to.include(t('signup:forgot.intro'));

      const wrong = await browser.fill(forgot, '/forgot-password', { [t('signup:forgot.email')]: 'not an address' }).expect(400);
      expectIn(wrong, lang);
      expect(fieldError(wrong.text, 'email')).to.equal(t('messages:emailInvalid'));

      const sent = await browser.follow(await browser.fill(wrong, '/forgot-password', { [t('signup:forgot.email')]: 'nobody@example.com' }).expect(302, '/forgot-password/sent')).expect(200);
      expectIn(sent, lang);
      expect(textOf(sent)).to.include(t('signup:resetSent.notice'));
    });

    it(`mails the reset link in ${lang} when it was asked for in ${lang}, and its form and rules speak ${lang}`, async () => {
      const t = translator(lang);
      const user = await makeUser(idp.db);
      const browser = new Browser(idp.url, { headers: { 'accept-language': lang } });
      const forgot = await browser.get('/forgot-password').expect(200);
      await browser.fill(forgot, '/forgot-password', { [t('signup:forgot.email')]: user.email }).expect(302);
      const mail = await smtp.nextWith(user.email, t('mail:resetPassword.subject'));
      expect(mail.text).to.include(t('mail:hello', { username: user.username })).and.include(t('mail:resetPassword.expires'));
      expect(mail.html).to.include(`<html lang="${lang}">`).and.include(t('mail:resetPassword.button'));
      expectNoEnglish(`${mail.text} ${mail.html}`, `the ${lang} mail`);

      // Its link: the form to choose the new password, and its rules' messages, in the same language.
      const link = linkIn(mail, idp.url);
      const reset = await browser.get(`${link.pathname}${link.search}`).expect(200);
      expectIn(reset, lang);
      const fill = (password: string, again: string) => browser.fill(reset, '/reset-password', { [t('signup:reset.password')]: password, [t('signup:reset.confirmation')]: again });
      const short = await fill('short', 'short').expect(400);
      expectIn(short, lang);
      expect(fieldError(short.text, 'password')).to.equal(t('messages:newPasswordTooShort'));
      expect(fieldError((await fill('password', 'password').expect(400)).text, 'password')).to.equal(t('messages:newPasswordCommon'));
      expect(fieldError((await fill('a long new passphrase', 'another passphrase').expect(400)).text, 'password_confirmation')).to.equal(t('messages:passwordsDiffer'));
    });

    it(`verifies an address in ${lang}: the link sent, its mail, a link to an old address, and the address verified`, async () => {
      const t = translator(lang);
      const user = await makeUser(idp.db, { verified: false });
      const browser = await signIn(new Browser(idp.url, { headers: { 'accept-language': lang } }), user);
      const banner = formOf((await browser.get('/groups').expect(200)).text, '/verify-email/resend');
      const sent = await browser.follow(await browser.postForm(banner.action, banner.fields).expect(302)).expect(200);
      expectIn(sent, lang);
      expect(textOf(sent)).to.include(user.email);

      const mail = await smtp.nextWith(user.email, t('mail:verifyEmail.subject'));
      expect(mail.html).to.include(`<html lang="${lang}">`).and.include(t('mail:verifyEmail.button'));
      expectNoEnglish(`${mail.text} ${mail.html}`, `the ${lang} mail`);

      // The address changed since the link was sent: the link verifies nothing, and says so.
      const changed = `changed-${user.username}@example.test`;
      await idp.db('users').where({ id: user.id }).update({ email: changed, email_key: changed });
      const old = linkIn(mail, idp.url);
      const outdated = await browser.get(`${old.pathname}${old.search}`).expect(409);
      expectIn(outdated, lang);
      expect(textOf(outdated)).to.include(t('signup:verify.sendTo', { email: changed }));

      const again = formOf(outdated.text, '/verify-email/resend');
      await browser.postForm(again.action, again.fields).expect(302);
      const link = linkIn(await smtp.nextWith(changed, t('mail:verifyEmail.subject')), idp.url);
      const done = await browser.follow(await browser.get(`${link.pathname}${link.search}`).expect(302)).expect(200);
      expectIn(done, lang);
      expect(textOf(done)).to.include(t('signup:verify.doneNotice'));
    });

    it(`says in ${lang} that the sign-up link is sent, naming the address given, and without it on a reload`, async () => {
      const t = translator(lang);
      const browser = new Browser(idp.url, { headers: { 'accept-language': lang } });
      const username = `signup-${lang}-${Date.now()}`;
      const form = await browser.get('/signup').expect(200);
      const sent = await browser.follow(await browser.fill(form, '/signup', { Username: username, Email: `${username}@example.test`, Password: 'a long new passphrase' }).expect(302)).expect(200);
      expectIn(sent, lang);
      expect(textOf(sent)).to.include(`${username}@example.test`);
      const reloaded = await browser.get('/signup/sent').expect(200);
      expectIn(reloaded, lang);
      expect(textOf(reloaded)).to.include(t('signup:signupSent.notice'));
    });
  }
});
