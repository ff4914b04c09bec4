import { expect } from 'chai';
import { useIdp } from '../helpers/app.js';
import { Browser } from '../helpers/browser.js';
import { makeClient, type Client } from '../helpers/factories.js';
import { errorMessage } from '../helpers/html.js';
import { expectIn, textOf } from '../helpers/i18n-pages.js';
import { authorizeUrl } from '../helpers/oauth.js';
import { LANGUAGES, translator } from '../../src/i18n.js';
import { errorPageIn } from '../../src/error-page.js';
import { LinkRefusedError, type LinkRefusal } from '../../src/services/account-links.js';

describe('Error pages in the reader\'s language', function () {
  this.timeout(30_000);
  const idp = useIdp('sqlite');
  let client: Client;

  before(async () => {
    client = await makeClient(idp.db, { name: 'Build Monitor' });
  });

  const browserIn = (lang: string) => new Browser(idp.url, { headers: { 'accept-language': lang } });

  it('translates an error page\'s words with their values, and none of them when one has no translation', () => {
    const en = translator('en');
    const title = en('upstream:sentences.failedWith', { provider: 'Acme SSO' });
    const known = errorPageIn('de', { title, message: en('upstream:sentences.unreachable', { provider: 'Acme SSO' }) });
    expect(known).to.deep.include({ title: translator('de')('upstream:sentences.failedWith', { provider: 'Acme SSO' }), message: translator('de')('upstream:sentences.unreachable', { provider: 'Acme SSO' }) });
    expect(errorPageIn('de', { title, message: 'Your Acme SSO account is not in a domain allowed to sign in here.' })).to.equal(undefined);
  });

  it('says a refused link in English on its page as the services say it to the API', () => {
    for (const reason of ['unknown', 'used', 'expired', 'exhausted'] as LinkRefusal[]) {
      expect(translator('en')(`errors:linkRefused.messages.${reason}`)).to.equal(new LinkRefusedError('verify-email', reason).message);
    }
  });

  for (const lang of LANGUAGES.filter((l) => l !== 'en')) {
    const t = translator(lang);

    it(`shows the 404 page in ${lang}`, async () => {
      const page = await browserIn(lang).get('/no-such-page').expect(404);
      expectIn(page, lang);
      expect(page.text).to.include(`<title>${t('errors:sentences.pageNotFound')} · Horizon ID</title>`);
      expect(errorMessage(page.text)).to.equal(t('errors:sentences.nothingHere'));
      expect(textOf(page)).to.include(t('errors:goToStart'));
    });

    it(`shows the 405 page in ${lang}, with the method refused`, async () => {
      const page = await browserIn(lang).request('/login', { method: 'PUT' }).expect(405);
      expectIn(page, lang);
      expect(errorMessage(page.text)).to.equal(t('errors:sentences.methodNotTaken', { method: 'PUT' }));
    });

    it(`shows the unknown-application page in ${lang}, with the client_id received`, async () => {
      const page = await browserIn(lang).get(authorizeUrl(idp.url, { clientId: 'no-such-app', redirectUri: client.redirectUri, scope: 'openid' })).expect(400);
      expectIn(page, lang);
      expect(errorMessage(page.text)).to.equal(t('errors:sentences.unknownAppMessage'));
      expect(textOf(page)).to.include(t('errors:sentences.clientIdReceived')).and.to.include('no-such-app').and.to.include(t('errors:sentences.unknownAppHint'));
    });

    it(`shows the wrong-redirect_uri page in ${lang}, naming the application`, async () => {
      const page = await browserIn(lang).get(authorizeUrl(idp.url, { clientId: client.clientId, redirectUri: 'https://elsewhere.example/cb', scope: 'openid' })).expect(400);
      expectIn(page, lang);
      expect(errorMessage(page.text)).to.equal(t('errors:sentences.redirectMismatch', { app: 'Build Monitor' }));
      expect(textOf(page)).to.include('https://elsewhere.example/cb').and.to.include(t('errors:sentences.redirectUriReceived'));
    });

    it(`shows a refused link's page in ${lang}, with the way to a new link`, async () => {
      const reset = await browserIn(lang).get('/reset-password?token=no-such-token').expect(400);
      expectIn(reset, lang);
      expect(reset.text).to.include(`<title>${t('errors:linkRefused.titles.unknown')} · Horizon ID</title>`);
      expect(errorMessage(reset.text)).to.equal(t('errors:linkRefused.messages.unknown'));
      expect(textOf(reset)).to.include(t('errors:linkRefused.requestNew'));
      const verify = await browserIn(lang).get('/verify-email?token=no-such-token').expect(400);
      expectIn(verify, lang);
      expect(verify.text).to.include('href="/login?return_to=%2Fgroups"');
    });

    it(`shows a failed sign-in with a provider in ${lang}`, async () => {
      // A step of signing in with a provider, opened without the sign-in it belongs to.
      const page = await browserIn(lang).get('/login/continue/sign-up').expect(400);
      expect(page.text).to.include('data-testid="upstream-error"');
      expectIn(page, lang);
      expect(page.text).to.include(`<title>${t('upstream:sentences.failed')} · Horizon ID</title>`);
      expect(errorMessage(page.text)).to.equal(t('upstream:sentences.stepExpired'));
      expect(textOf(page)).to.include(t('upstream:otherWay'));
    });

    it(`keeps an error page whose message has no ${lang} translation wholly English`, async () => {
      // The library's own description of a bad request (a parameter given twice) is English only: the whole page stays English.
      const url = `${authorizeUrl(idp.url, { clientId: client.clientId, redirectUri: client.redirectUri, scope: 'openid' })}&client_id=${client.clientId}`;
      const page = await browserIn(lang).get(url).expect(400);
      expect(page.text).to.include('<html lang="en">');
      expect(page.headers.get('content-language')).to.equal('en');
      expect(page.headers.get('vary') ?? '').to.match(/accept-language/i);
      expect(page.text).to.include('<title>The request could not be completed · Horizon ID</title>');
      expect(textOf(page)).to.include('Go to the start page').and.to.include('API reference');
    });
  }

  it('keeps the error pages English for a reader who asks for English', async () => {
    const page = await browserIn('en').get('/no-such-page').expect(404);
    expect(page.text).to.include('<html lang="en">');
    expect(errorMessage(page.text)).to.equal('There is nothing at this address.');
  });
});
