import { expect } from 'chai';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { Browser, signIn, type Page } from '../helpers/browser.js';
import { makeClient, makeUser } from '../helpers/factories.js';
import { authorizeUrl } from '../helpers/oauth.js';
import { fieldError, filledForm, parseForm } from '../helpers/html.js';
import { translator } from '../../src/i18n.js';

describeEachProfile('Account settings: the Language setting', (profile) => {
  const idp = useIdp(profile);

  /** A signed-in browser whose Accept-Language asks for German. */
  async function germanBrowser() {
    const user = await makeUser(idp.db);
    const browser = await signIn(new Browser(idp.url, { headers: { 'accept-language': 'de' } }), user);
    return { user, browser };
  }

  /** Chooses `value` in the Profile page's Language form, as a person picks it from the list. */
  async function choose(browser: Browser, value: string): Promise<Page> {
    const profilePage = await browser.get('/account/settings/profile').expect(200);
    const select = parseForm(profilePage.text, '/account/settings/language').controls.find((c) => c.type === 'select');
    expect(select, 'the Language form has a list').to.not.equal(undefined);
    // Only a value the list offers, as a browser would send.
    expect(profilePage.text).to.match(new RegExp(`<option value="${value}"`));
    const form = filledForm(profilePage.text, '/account/settings/language', { [select!.name]: value });
    return browser.postForm(form.action, form.fields).expect(302, '/account/settings/profile?notice=language-saved');
  }

  const languageOf = (page: Page) => /<html lang="(\w+)">/.exec(page.text)?.[1];

  it('follows the browser until a language is chosen, then the account\'s choice on any browser, and Automatic goes back', async () => {
    const { user, browser } = await germanBrowser();
    expect(languageOf(await browser.get('/login/oauth/logout').expect(200))).to.equal('de');

    await choose(browser, 'ja');
    const chosen = await browser.get('/login/oauth/logout').expect(200);
    expect(languageOf(chosen)).to.equal('ja');
    expect(chosen.headers.get('content-language')).to.equal('ja');
    expect(chosen.text).to.include(translator('ja')('logout:confirmHeading'));
    // Another browser of the same account, asking for English: the account's choice still.
    const other = await signIn(new Browser(idp.url, { headers: { 'accept-language': 'en' } }), user);
    expect(languageOf(await other.get('/login/oauth/logout').expect(200))).to.equal('ja');

    await choose(browser, '');
    expect(languageOf(await browser.get('/login/oauth/logout').expect(200))).to.equal('de');
    expect(languageOf(await other.get('/login/oauth/logout').expect(200))).to.equal('en');
  });

  it('offers Automatic with the browser\'s language named, and each language in its own name', async () => {
    const { browser } = await germanBrowser();
    const page = await browser.get('/account/settings/profile').expect(200);
    const t = translator(languageOf(page) as 'en' | 'de' | 'ja');
    expect(page.text).to.include(t('common:language.automatic', { language: 'Deutsch' }));
    expect(page.text).to.include('<option value="ja" lang="ja">日本語</option>');
  });

  it('refuses a language the site does not have, naming the field, and keeps the one chosen', async () => {
    const { browser } = await germanBrowser();
    await choose(browser, 'de');
    const page = await browser.get('/account/settings/profile').expect(200);
    const form = filledForm(page.text, '/account/settings/language');
    const refused = await browser.postForm(form.action, { ...form.fields, language: 'xx' }).expect(400);
    expect(fieldError(refused.text, 'language')).to.equal(translator(languageOf(refused) as 'de')('messages:languageInvalid', { list: 'en, de, ja' }));
    expect(languageOf(await browser.get('/login/oauth/logout').expect(200))).to.equal('de');
  });

  it('shows an application\'s consent page in the account\'s language once the person signed in, whatever the browser asks for', async () => {
    const client = await makeClient(idp.db, { name: 'Build Monitor' });
    const { user, browser: settings } = await germanBrowser();
    await choose(settings, 'ja');
    const browser = new Browser(idp.url, { headers: { 'accept-language': 'de' } });
    const signInPage = await browser.follow(authorizeUrl(idp.url, { clientId: client.clientId, redirectUri: client.redirectUri, scope: 'groups:read-only' })).expect(200);
    // Nobody is known yet: the browser's language.
    expect(languageOf(signInPage)).to.equal('de');
    const de = translator('de');
    const signedIn = await browser.fill(signInPage, '/login', { [de('signin:usernameOrEmail')]: user.username, [de('signin:password')]: user.password });
    const consent = await browser.follow(signedIn).expect(200);
    expect(languageOf(consent)).to.equal('ja');
    expect(consent.text).to.include(translator('ja')('consent:title', { app: 'Build Monitor' }));
  });

  it('needs the form token: a forged post changes nothing', async () => {
    const { browser } = await germanBrowser();
    await browser.postForm('/account/settings/language', { language: 'ja' }).expect(403);
    expect(languageOf(await browser.get('/login/oauth/logout').expect(200))).to.equal('de');
  });
});
