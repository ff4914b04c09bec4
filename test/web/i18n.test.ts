import { expect } from 'chai';
import * as openid from 'openid-client';
import { useIdp } from '../helpers/app.js';
import { Browser, type Page } from '../helpers/browser.js';
import { makeApp, makeClient, makeGroup, makeUser, type Client, type TestUser } from '../helpers/factories.js';
import { errorMessage, fieldError, formOf, unescapeHtml } from '../helpers/html.js';
import { expectIn, textOf } from '../helpers/i18n-pages.js';
import { authorizeUrl } from '../helpers/oauth.js';
import { withTwoFactor } from '../helpers/totp.js';
import { useUpstreamSignInProvider } from '../federation/upstream-server.js';
import { inWords } from '../../src/errors.js';
import { LANGUAGES, translator, type Language } from '../../src/i18n.js';

describe('Pages in the reader\'s language', function () {
  this.timeout(30_000);
  const idp = useIdp('sqlite');
  let client: Client;
  let user: TestUser;
  let device: openid.Configuration;

  before(async () => {
    client = await makeClient(idp.db, { name: 'Build Monitor' });
    const owner = await makeUser(idp.db);
    const group = await makeGroup(idp.db, owner.id, { name: 'Living Room Screens' });
    const tv = await makeApp(idp.db, owner.id, group.id, { name: 'TV App', deviceFlow: true });
    device = await openid.discovery(new URL(idp.url), tv.clientId, tv.clientSecret, undefined, { execute: [openid.allowInsecureRequests] });
  });

  beforeEach(async () => {
    user = await makeUser(idp.db);
  });

  const browserIn = (lang: string) => new Browser(idp.url, { headers: { 'accept-language': lang } });

  /** Opens the client's authorization request: the flow's sign-in page. */
  async function flowSignIn(browser: Browser, scope = 'groups:read-only'): Promise<Page> {
    return browser.follow(authorizeUrl(idp.url, { clientId: client.clientId, redirectUri: client.redirectUri, scope })).expect(200);
  }

  /** Signs in on the flow's sign-in page through its form, by its labels in the page's language. */
  function signInThere(browser: Browser, page: Page, lang: Language, password = user.password) {
    const t = translator(lang);
    return browser.fill(page, '/login', { [t('signin:usernameOrEmail')]: user.username, [t('signin:password')]: password });
  }

  for (const lang of LANGUAGES.filter((l) => l !== 'en')) {
    it(`shows the site's sign-in page in ${lang}, the layout too`, async () => {
      const page = await browserIn(lang).get('/login').expect(200);
      expectIn(page, lang);
      expect(page.text).to.include(`<title>${translator(lang)('signin:title')} · Horizon ID</title>`);
    });

    it(`shows the flow's sign-in page in ${lang}, and its wrong-password message`, async () => {
      const browser = browserIn(lang);
      const page = await flowSignIn(browser);
      expectIn(page, lang);
      expect(textOf(page)).to.include('Build Monitor');
      const wrong = await signInThere(browser, page, lang, 'not the password').expect(401);
      expectIn(wrong, lang);
      expect(fieldError(wrong.text, 'login')).to.equal(translator(lang)('messages:wrongPassword'));
    });

    it(`shows the consent page in ${lang}, with the scopes and the ignored ones`, async () => {
      const browser = browserIn(lang);
      const page = await flowSignIn(browser, 'groups:read-only email repo user');
      const consent = await browser.follow(await signInThere(browser, page, lang)).expect(200);
      expectIn(consent, lang);
      const t = translator(lang);
      expect(textOf(consent)).to.include(t('consent:scopes.groups-read-only')).and.to.include(t('consent:scopes.email'));
      expect(textOf(consent)).to.include(t('consent:ignored', { count: 2 }));
      expect(consent.text).to.include(`<h1>${t('consent:heading', { app: 'Build Monitor' })}</h1>`);
    });

    it(`shows the two-factor step in ${lang}, and its wrong-code message`, async () => {
      await withTwoFactor(idp.db, user);
      const browser = browserIn(lang);
      const page = await flowSignIn(browser);
      const challenge = await browser.follow(await signInThere(browser, page, lang)).expect(200);
      expectIn(challenge, lang);
      const t = translator(lang);
      const wrong = await browser.fill(challenge, '/two-factor', { [t('signin:twoFactor.code')]: '000000' }).expect(400);
      expectIn(wrong, lang);
      expect(fieldError(wrong.text, 'code')).to.be.oneOf([t('messages:wrongCode'), t('messages:wrongCodeNow')]);
    });

    it(`says in ${lang} that there were too many sign-in attempts, and how long to wait`, async () => {
      const browser = browserIn(lang);
      let page = await flowSignIn(browser);
      for (let i = 0; i < 8 && page.status !== 429; i += 1) page = await signInThere(browser, page, lang, 'not the password');
      expect(page.status).to.equal(429);
      expectIn(page, lang);
      const t = translator(lang);
      const wait = inWords(Number(page.headers.get('retry-after')), lang);
      expect(fieldError(page.text, 'login')).to.equal(`${t('messages:tooManySignIns')}${t('messages:_separator')}${t('messages:_tryAgain', { wait })}`);
    });

    it(`asks to confirm signing out in ${lang}, and says it is done in ${lang}`, async () => {
      const browser = browserIn(lang);
      const page = await flowSignIn(browser);
      await browser.follow(await signInThere(browser, page, lang)).expect(200);
      const confirm = await browser.get('/login/oauth/logout').expect(200);
      expectIn(confirm, lang);
      const form = formOf(confirm.text, '/logout/confirm');
      // The "Yes" button submits the library's form with its name and value.
      expect(confirm.text).to.match(/<button type="submit" form="op\.logoutForm" name="logout" value="yes"/);
      const done = await browser.follow(await browser.postForm(form.action, { ...form.fields, logout: 'yes' })).expect(200);
      expect(done.text).to.include('data-testid="logout-done"');
      expectIn(done, lang);
      const again = await browser.get('/login/oauth/logout').expect(200);
      expect(again.text).to.include('data-testid="logout-continue"');
      expectIn(again, lang);
    });

    it(`connects a device in ${lang}: the code page, a wrong code, the confirmation, consent and the result`, async () => {
      const browser = browserIn(lang);
      const t = translator(lang);
      const entry = await browser.get('/login/device').expect(200);
      expectIn(entry, lang);
      const entryForm = formOf(entry.text, '/login/device');
      const wrong = await browser.postForm(entryForm.action, { ...entryForm.fields, user_code: 'BCDF-GHJK' }).expect(200);
      expectIn(wrong, lang);
      expect(errorMessage(wrong.text)).to.equal(t('device:problems.NotFoundError'));
      const started = await openid.initiateDeviceAuthorization(device, { scope: 'groups:read-only' });
      const confirm = await browser.postForm(entryForm.action, { ...formOf(wrong.text, '/login/device').fields, user_code: started.user_code }).expect(200);
      expect(confirm.text).to.include('data-testid="device-confirm"');
      expectIn(confirm, lang);
      const confirmForm = formOf(confirm.text, '/login/device');
      const signIn = await browser.follow(await browser.postForm(confirmForm.action, { ...confirmForm.fields, confirm: 'yes' })).expect(200);
      expectIn(signIn, lang);
      const consent = await browser.follow(await signInThere(browser, signIn, lang)).expect(200);
      expectIn(consent, lang);
      expect(textOf(consent)).to.include(t('consent:deviceSignedIn'));
      const result = await browser.follow(await browser.submit(formOf(consent.text, '/confirm').action)).expect(200);
      expect(result.text).to.include('data-testid="device-success"');
      expectIn(result, lang);
    });
  }

  it('chooses the language from Accept-Language: q-values, a region to its language, anything else English', async () => {
    const cases: Array<[string | undefined, Language]> = [
      [undefined, 'en'],
      ['de', 'de'],
      ['de-AT', 'de'],
      ['ja-JP,ja;q=0.9', 'ja'],
      ['fr-FR, fr;q=0.9', 'en'],
      ['fr, de;q=0.5, ja;q=0.8', 'ja'],
      ['de;q=0.1, en;q=0.9', 'en'],
      ['en-US,en;q=0.9,de;q=0.8', 'en'],
      ['*', 'en'],
      ['not a language header;;', 'en'],
    ];
    for (const [header, lang] of cases) {
      const page = await new Browser(idp.url, header === undefined ? {} : { headers: { 'accept-language': header } }).get('/login').expect(200);
      expect(page.headers.get('content-language'), String(header)).to.equal(lang);
      expect(page.text, String(header)).to.include(`<html lang="${lang}">`);
    }
  });

  it('signs in in German through the German form, as in English', async () => {
    const browser = browserIn('de');
    const page = await browser.get('/login').expect(200);
    await browser.fill(page, '/login', { 'Benutzername oder E-Mail-Adresse': user.username, Passwort: user.password }).expect(302, '/groups');
  });
});

describe('Pages in the reader\'s language: verified addresses and upstream sign-in', function () {
  this.timeout(30_000);
  const idp = useIdp('sqlite', { REQUIRE_VERIFIED_EMAIL: 'true' });
  const upstream = useUpstreamSignInProvider(idp);
  let client: Client;

  before(async () => {
    client = await makeClient(idp.db, { name: 'Build Monitor' });
  });

  for (const lang of LANGUAGES.filter((l) => l !== 'en')) {
    it(`asks for a verified address in ${lang} before consent`, async () => {
      const user = await makeUser(idp.db, { verified: false });
      const t = translator(lang);
      const browser = new Browser(idp.url, { headers: { 'accept-language': lang } });
      const signIn = await browser.follow(authorizeUrl(idp.url, { clientId: client.clientId, redirectUri: client.redirectUri })).expect(200);
      const page = await browser.follow(await browser.fill(signIn, '/login', { [t('signin:usernameOrEmail')]: user.username, [t('signin:password')]: user.password })).expect(403);
      expect(errorMessage(page.text)).to.equal(t('signin:verifyRequired.why'));
      expectIn(page, lang);
    });

    it(`continues with an upstream provider in ${lang}, and asks in ${lang} to link an account with the same address`, async () => {
      const owner = await makeUser(idp.db);
      upstream().state.person = { sub: `sub-${owner.username}`, email: owner.email, email_verified: true, name: 'Same Person', preferred_username: owner.username };
      const t = translator(lang);
      const browser = new Browser(idp.url, { also: [upstream().url], headers: { 'accept-language': lang } });
      const signIn = await browser.get('/login').expect(200);
      expect(textOf(signIn)).to.include(t('signin:continueWith', { provider: 'Upstream' }));
      const moving = await browser.fill(signIn, '/login/upstream/upstream').expect(200);
      expectIn(moving, lang);
      const href = unescapeHtml(/href="([^"]+)" data-testid="upstream-continue"/.exec(moving.text)?.[1] ?? '');
      const link = await browser.follow(href).expect(200);
      expect(link.url.pathname).to.equal('/login/continue/link');
      expectIn(link, lang);
      const wrong = await browser.fill(link, '/login/continue/link', { [t('signin:upstream.password')]: 'not the password' }).expect(401);
      expectIn(wrong, lang);
      expect(fieldError(wrong.text, 'password')).to.equal(t('messages:incorrectPassword'));
    });
  }
});
