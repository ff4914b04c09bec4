import { expect } from 'chai';
import { useIdp } from '../helpers/app.js';
import { Browser } from '../helpers/browser.js';
import { makeUser } from '../helpers/factories.js';
import { fieldError } from '../helpers/html.js';
import { expectIn, expectNoEnglish, textOf } from '../helpers/i18n-pages.js';
import { linkIn, useMailServer } from '../helpers/smtp.js';
import { TRANSLATED_VIEWS, translator, type Language } from '../../src/i18n.js';

describe('Recovering an account in the reader\'s language', function () {
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

  it('lists the pages of asking for a password reset as translated', () => {
    for (const view of ['password-reset/forgot', 'password-reset/sent']) expect(TRANSLATED_VIEWS.has(view), view).to.equal(true);
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

    it(`mails the reset link in ${lang} when it was asked for in ${lang}`, async () => {
      const t = translator(lang);
      const user = await makeUser(idp.db);
      const browser = new Browser(idp.url, { headers: { 'accept-language': lang } });
      const forgot = await browser.get('/forgot-password').expect(200);
      await browser.fill(forgot, '/forgot-password', { [t('signup:forgot.email')]: user.email }).expect(302);
      const mail = await smtp.nextWith(user.email, t('mail:resetPassword.subject'));
      expect(mail.text).to.include(t('mail:hello', { username: user.username })).and.include(t('mail:resetPassword.expires'));
      expect(mail.html).to.include(`<html lang="${lang}">`).and.include(t('mail:resetPassword.button'));
      expectNoEnglish(`${mail.text} ${mail.html}`, `the ${lang} mail`);
      linkIn(mail, idp.url);
    });
  }
});
