import { expect } from 'chai';
import { useIdp } from '../helpers/app.js';
import { Browser, signIn, type Page } from '../helpers/browser.js';
import { makeClient, makeGroup, makeUser, personalToken, type TestUser } from '../helpers/factories.js';
import { fieldError, formOf } from '../helpers/html.js';
import { expectIn, textOf } from '../helpers/i18n-pages.js';
import { oauthTokens } from '../helpers/oauth.js';
import { ageSession } from '../helpers/sessions.js';
import { linkIn, useMailServer } from '../helpers/smtp.js';
import { changing } from '../../src/services/change-versions.js';
import { noPasswordHash } from '../../src/services/passwords.js';
import { formatDate, translator, type Language } from '../../src/i18n.js';

describe('Account settings (profile, password, sessions, applications, sign-in methods, deleting) in the reader\'s language', function () {
  this.timeout(60_000);
  const smtp = useMailServer();
  const idp = useIdp('sqlite', () => ({ SMTP_URL: smtp.url, REQUIRE_VERIFIED_EMAIL: 'true', RATE_LIMIT_RESET_IP: 'off' }));

  const browserIn = (lang: string) => new Browser(idp.url, { headers: { 'accept-language': lang } });
  const signedIn = async (lang: Language, user: TestUser) => signIn(browserIn(lang), user);

  it('keeps the English pages English, dates written the English way', async () => {
    const user = await makeUser(idp.db);
    const browser = await signedIn('en', user);
    const sessions = await browser.get('/account/settings/sessions').expect(200);
    expect(sessions.text).to.include('<html lang="en">').and.include('<h1>Sessions</h1>').and.include('>This browser</span>');
    const iso = /<time datetime="([^"]+)">([^<]+)<\/time>/.exec(sessions.text)!;
    expect(iso[2]).to.equal(formatDate(new Date(iso[1]!), 'en'));
  });

  for (const lang of ['de', 'ja'] as Language[]) {
    const t = translator(lang);

    it(`shows Profile in ${lang}, says a bad address is bad in ${lang} beside its field, and that the profile is saved`, async () => {
      const user = await makeUser(idp.db);
      const browser = await signedIn(lang, user);
      const profile = await browser.get('/account/settings/profile').expect(200);
      expectIn(profile, lang);
      expect(textOf(profile)).to.include(t('account:profile.usernameHint'));
      expect(profile.text).to.include(`<title>${t('account:titles.profile')} · Horizon ID</title>`);

      const bad = await browser.fill(profile, '/account/settings/profile', { [t('account:profile.email')]: 'not an address', [t('account:profile.currentPassword')]: user.password }).expect(400);
      expectIn(bad, lang);
      expect(fieldError(bad.text, 'email')).to.equal(t('messages-account:addressInvalid'));

      const tooLong = await browser.fill(bad, '/account/settings/profile', { [t('account:profile.name')]: 'x'.repeat(101), [t('account:profile.email')]: user.email }).expect(400);
      expect(fieldError(tooLong.text, 'name')).to.equal(t('messages-account:nameTooLong', { max: 100 }));

      const saved = await browser.follow(await browser.fill(tooLong, '/account/settings/profile', { [t('account:profile.name')]: 'Ada', [t('account:profile.email')]: user.email }).expect(302)).expect(200);
      expectIn(saved, lang);
      expect(textOf(saved)).to.include(t('account:notices.profileSaved'));
    });

    it(`shows Password in ${lang}, a wrong current password and a short new one in ${lang}, and the change`, async () => {
      const user = await makeUser(idp.db);
      const browser = await signedIn(lang, user);
      const page = await browser.get('/account/settings/password').expect(200);
      expectIn(page, lang);
      const fill = (from: Page, current: string, password: string, again = password) =>
        browser.fill(from, '/account/settings/password', { [t('account:password.current')]: current, [t('account:password.new')]: password, [t('account:password.confirmation')]: again });

      const short = await fill(page, user.password, 'short').expect(400);
      expectIn(short, lang);
      expect(fieldError(short.text, 'password')).to.equal(t('messages:newPasswordTooShort'));
      const wrong = await fill(short, 'not my password', 'a long new passphrase').expect(400);
      expectIn(wrong, lang);
      expect(fieldError(wrong.text, 'current_password')).to.equal(t('messages-account:currentPasswordIncorrect'));

      const changed = await browser.follow(await fill(wrong, user.password, 'a long new passphrase').expect(302)).expect(200);
      expectIn(changed, lang);
      expect(textOf(changed)).to.include(t('account:notices.passwordChanged'));
    });

    it(`shows Sessions in ${lang}, dates written the ${lang} way, and signs the others out`, async () => {
      const user = await makeUser(idp.db);
      // The other session: Firefox on Linux, named in the page's words; this one sends no User-Agent.
      await signIn(new Browser(idp.url, { userAgent: 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0' }), user);
      const browser = await signedIn(lang, user);
      const page = await browser.get('/account/settings/sessions').expect(200);
      expectIn(page, lang);
      expect(textOf(page)).to.include(t('account:sessions.thisBrowser')).and.include(t('account:sessions.signOutOthers'));
      expect(textOf(page)).to.include(t('common:userAgent.on', { browser: 'Firefox', os: 'Linux' })).and.include(t('common:userAgent.unknown'));
      const [, iso, shown] = /<time datetime="([^"]+)">([^<]+)<\/time>/.exec(page.text)!;
      expect(shown).to.equal(formatDate(new Date(iso!), lang));

      const after = await browser.follow(await browser.fill(page, '/sessions/sign-out-others').expect(302)).expect(200);
      expectIn(after, lang);
      expect(textOf(after)).to.include(t('account:notices.othersSignedOut'));
    });

    it(`shows Authorized applications in ${lang}, empty and with an application, and revokes it`, async () => {
      const user = await makeUser(idp.db);
      const browser = await signedIn(lang, user);
      const empty = await browser.get('/account/settings/applications').expect(200);
      expectIn(empty, lang);
      expect(textOf(empty)).to.include(t('account:applications.none'));

      const client = await makeClient(idp.db, { name: `Build Monitor ${lang}` });
      await oauthTokens(idp.url, client, user);
      const listed = await browser.get('/account/settings/applications').expect(200);
      expectIn(listed, lang);
      expect(textOf(listed)).to.include(`Build Monitor ${lang}`).and.include(t('account:applications.revoke'));
      expect(listed.text).to.include(`data-confirm="${t('account:applications.revokeConfirm', { name: `Build Monitor ${lang}` })}"`);

      const revoked = await browser.follow(await browser.fill(listed, '/revoke').expect(302)).expect(200);
      expectIn(revoked, lang);
      expect(textOf(revoked)).to.include(t('account:notices.appRevoked'));
    });

    it(`shows Delete account in ${lang}, a group's last owner too, a wrong password in ${lang}, and the account deleted`, async () => {
      const owner = await makeUser(idp.db);
      await makeGroup(idp.db, owner.id, { name: `Kept ${lang}` });
      const ownerBrowser = await signedIn(lang, owner);
      const refused = await ownerBrowser.get('/account/settings/delete').expect(200);
      expectIn(refused, lang);
      expect(refused.text).to.include('data-testid="last-owner"').and.include(`Kept ${lang}</a>`);

      const user = await makeUser(idp.db);
      const browser = await signedIn(lang, user);
      const page = await browser.get('/account/settings/delete').expect(200);
      expectIn(page, lang);
      const wrong = await browser.fill(page, '/account/settings/delete', { [t('account:delete.password')]: 'not my password' }).expect(400);
      expectIn(wrong, lang);
      expect(fieldError(wrong.text, 'password')).to.equal(t('messages-account:currentPasswordIncorrect'));

      const deleted = await browser.follow(await browser.fill(wrong, '/account/settings/delete', { [t('account:delete.password')]: user.password }).expect(302, '/account/deleted')).expect(200);
      expectIn(deleted, lang);
      expect(textOf(deleted)).to.include(t('account:deleted.text'));
    });

    it(`shows Sign-in methods in ${lang}, with a password and without, and a short first password in ${lang}`, async () => {
      const user = await makeUser(idp.db);
      const browser = await signedIn(lang, user);
      const withPassword = await browser.get('/account/settings/sign-in-methods').expect(200);
      expectIn(withPassword, lang);
      expect(textOf(withPassword)).to.include(t('account:signInMethods.passwordSet')).and.include(t('account:signInMethods.noPasskeys'));

      await changing(idp.db, [`user:${user.id}`], () => idp.db('users').where({ id: user.id }).update({ password_hash: noPasswordHash() }));
      const without = await browser.get('/account/settings/sign-in-methods').expect(200);
      expectIn(without, lang);
      expect(textOf(without)).to.include(t('account:signInMethods.noPassword', { methods: t('account:signInMethods.anotherMethod') }));
      const fill = (password: string, again = password) =>
        browser.fill(without, '/sign-in-methods/password', { [t('account:signInMethods.newPassword')]: password, [t('account:signInMethods.confirmation')]: again });
      const short = await fill('short').expect(400);
      expectIn(short, lang);
      expect(fieldError(short.text, 'password')).to.equal(t('messages:newPasswordTooShort'));
      const set = await browser.follow(await fill('a long new passphrase').expect(302)).expect(200);
      expectIn(set, lang);
      expect(textOf(set)).to.include(t('account:notices.passwordSet'));
    });

    it(`asks to confirm access in ${lang}, says a wrong password in ${lang}, and without a password offers to sign in again`, async () => {
      const user = await makeUser(idp.db);
      const browser = await signedIn(lang, user);
      await ageSession(idp, browser.cookies().get('idp_session'), 11);
      const prompt = await browser.get('/account/confirm-access?for=delete-account').expect(200);
      expectIn(prompt, lang);
      expect(textOf(prompt)).to.include(t('account:confirm.passwordFor', { purpose: t('account:purpose.delete-account') }));

      const wrong = await browser.fill(prompt, '/account/confirm-access', { [t('account:confirm.passwordLabel')]: 'not my password' }).expect(400);
      expectIn(wrong, lang);
      expect(fieldError(wrong.text, 'confirm_password')).to.equal(t('messages-account:currentPasswordIncorrect'));
      const empty = await browser.fill(wrong, '/account/confirm-access', { [t('account:confirm.passwordLabel')]: '' }).expect(400);
      expect(fieldError(empty.text, 'confirm_password')).to.equal(t('messages-account:enterCurrentPassword'));

      await changing(idp.db, [`user:${user.id}`], () => idp.db('users').where({ id: user.id }).update({ password_hash: noPasswordHash() }));
      const noPassword = await browser.get('/account/confirm-access?for=set-password').expect(200);
      expectIn(noPassword, lang);
      expect(textOf(noPassword)).to.include(t('account:confirm.signInAgainFor', { purpose: t('account:purpose.set-password') }));
    });

    it(`says in ${lang} to verify the address first before linking a sign-in method`, async () => {
      const user = await makeUser(idp.db, { verified: false });
      const browser = await signedIn(lang, user);
      await browser.get('/account/settings/sign-in-methods').expect(200);
      const page = await browser.submit('/account/settings/sign-in-methods/link/anywhere').expect(403);
      expectIn(page, lang);
      expect(textOf(page)).to.include(t('account:verifyFirst.problemFor', { purpose: t('account:purpose.link-sign-in-method') }));
    });

    it(`shows the page after a password reset in ${lang}: what else reaches the account, removed, and nothing left`, async () => {
      const user = await makeUser(idp.db);
      await personalToken(idp.db, user.id, { name: `script ${lang}` });
      await oauthTokens(idp.url, await makeClient(idp.db, { name: `Helper ${lang}` }), user);

      const browser = browserIn(lang);
      const forgot = await browser.get('/forgot-password').expect(200);
      await browser.fill(forgot, '/forgot-password', { [translator(lang)('signup:forgot.email')]: user.email }).expect(302);
      const link = linkIn(await smtp.nextWith(user.email, t('mail:resetPassword.subject')), idp.url);
      const reset = await browser.get(`${link.pathname}${link.search}`).expect(200);
      await browser.fill(reset, '/reset-password', { [t('signup:reset.password')]: 'a long new passphrase', [t('signup:reset.confirmation')]: 'a long new passphrase' }).expect(302, '/reset-password/done');
      await signIn(idp.url, { username: user.username, password: 'a long new passphrase' });

      const done = await browser.get('/reset-password/done').expect(200);
      expectIn(done, lang);
      expect(textOf(done)).to.include(t('account:recovery.intro')).and.include(`script ${lang}`).and.include(`Helper ${lang}`);
      expect(done.text).to.include(`aria-label="${t('account:recovery.removeToken', { name: `script ${lang}` })}"`);

      const all = formOf(done.text, '/reset-password/done/remove-all');
      const emptied = await browser.follow(await browser.postForm(all.action, all.fields).expect(302)).expect(200);
      expectIn(emptied, lang);
      expect(textOf(emptied)).to.include(t('account:notices.allRemoved')).and.include(t('account:recovery.nothingLeft'));

      // Another browser sees only that the password is changed.
      const elsewhere = await browserIn(lang).get('/reset-password/done').expect(200);
      expectIn(elsewhere, lang);
      expect(textOf(elsewhere)).to.include(t('account:recovery.done'));
    });
  }
});
