import { expect } from 'chai';
import { useIdp } from '../helpers/app.js';
import { Browser } from '../helpers/browser.js';
import { fieldError } from '../helpers/html.js';
import { expectIn, textOf } from '../helpers/i18n-pages.js';
import { TRANSLATED_VIEWS, translator, type Language } from '../../src/i18n.js';

describe('Recovering an account in the reader\'s language', function () {
  this.timeout(30_000);
  const idp = useIdp('sqlite');

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
  }
});
