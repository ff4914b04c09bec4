import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import Koa from 'koa';
import { useIdp } from '../helpers/app.js';
import { Browser, signIn } from '../helpers/browser.js';
import { makeUser } from '../helpers/factories.js';
import { errorMessage, fieldError, filled, formOf, unescapeHtml } from '../helpers/html.js';
import { expectIn, expectNoEnglish, textOf } from '../helpers/i18n-pages.js';
import { linkIn, useMailServer } from '../helpers/smtp.js';
import { useUpstreamSignInProvider } from '../federation/upstream-server.js';
import { translator, type Language } from '../../src/i18n.js';
import { addressInUseMail } from '../../src/services/address-mail.js';
import { renderMail, type Mail } from '../../src/services/mail.js';
import type { KdfQueue } from '../../src/services/passwords.js';
import { COMMAND_LINE, SECURITY_EVENTS, securityNotice } from '../../src/services/security-notices.js';
import { refuseHashingWhenBusy } from '../../src/web/busy.js';

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
      const sent = await browser.follow(await browser.fill(form, '/signup', { [t('signup:form.username')]: username, [t('signup:form.email')]: `${username}@example.test`, [t('signup:form.password')]: 'a long new passphrase' }).expect(302)).expect(200);
      expectIn(sent, lang);
      expect(textOf(sent)).to.include(`${username}@example.test`);
      const reloaded = await browser.get('/signup/sent').expect(200);
      expectIn(reloaded, lang);
      expect(textOf(reloaded)).to.include(t('signup:signupSent.notice'));
    });
  }
});

describe('Signing up in the reader\'s language: the form, its link\'s page and mail, an upstream provider\'s sign-up, the notices', function () {
  this.timeout(30_000);
  const smtp = useMailServer();
  // Every test here signs up from 127.0.0.1: more than the sign-up limit of one network allows.
  const idp = useIdp('sqlite', () => ({ SMTP_URL: smtp.url, RATE_LIMIT_SIGNUP_IP: 'off' }));
  const upstream = useUpstreamSignInProvider(idp);

  before(async () => {
  });

  it('keeps the English sign-up form and its mail in English', async () => {
    const browser = new Browser(idp.url, { headers: { 'accept-language': 'en' } });
    const form = await browser.get('/signup').expect(200);
    expect(textOf(form)).to.include('Create your account').and.include('2–39 ASCII letters, digits, "-", "_" or "."').and.include('Already have an account?');
    const username = `signup-en-${Date.now()}`;
    await browser.fill(form, '/signup', { Username: username, Email: `${username}@example.test`, Password: 'a long new passphrase' }).expect(302);
    const mail = await smtp.nextWith(`${username}@example.test`, 'Finish creating your account');
    expect(mail.html).to.include('<html lang="en">');
    expect(mail.text).to.include(`Someone, probably you, asked to create the account "${username}" on`);
  });

  it('writes to an account in the language it chose, whatever the page of the one who caused the mail', async () => {
    const owner = await makeUser(idp.db);
    await idp.db('users').where({ id: owner.id }).update({ language: 'ja' });
    const t = translator('ja');
    const browser = new Browser(idp.url, { headers: { 'accept-language': 'de' } });
    const form = await browser.get('/signup').expect(200);
    await browser.fill(form, '/signup', { Benutzername: `other-${Date.now()}`, 'E-Mail-Adresse': owner.email, Passwort: 'a long new passphrase' }).expect(302);
    const mail = await smtp.nextWith(owner.email, t('mail:addressInUse.signup.subject'));
    expect(mail.html).to.include('<html lang="ja">');
    // An administrator's change: the notice in the account's language too, not the administrator's page's.
    const notice = securityNotice('https://id.example.test', { ...owner, language: 'ja' }, 'two-factor-reset', { ip: '192.0.2.7', userAgent: '', lang: 'en' });
    expect(notice.lang).to.equal('ja');
    expect(notice.subject).to.equal(t('mail:notice.events.two-factor-reset.subject'));
  });

  for (const lang of ['de', 'ja'] as Language[]) {
    const browserIn = () => new Browser(idp.url, { also: [upstream().url], headers: { 'accept-language': lang } });

    it(`shows the sign-up form in ${lang}, and the rules of its fields in ${lang} beside them`, async () => {
      const t = translator(lang);
      const browser = browserIn();
      const form = await browser.get('/signup').expect(200);
      expectIn(form, lang);
      expect(form.text).to.include(`<title>${t('signup:form.title')} · Horizon ID</title>`);
      const fill = (page: typeof form, values: { username: string; email: string; password: string }) =>
        browser.fill(page, '/signup', { [t('signup:form.username')]: values.username, [t('signup:form.email')]: values.email, [t('signup:form.password')]: values.password });

      const bad = await fill(form, { username: 'x', email: 'not an address', password: 'short' }).expect(400);
      expectIn(bad, lang);
      expect(fieldError(bad.text, 'username')).to.equal(t('messages-signup:usernameLength'));
      expect(fieldError(bad.text, 'email')).to.equal(t('messages:emailInvalid'));
      expect(fieldError(bad.text, 'password')).to.equal(t('messages-signup:passwordTooShort'));

      const common = await fill(bad, { username: 'a b', email: 'someone@example.test', password: 'password' }).expect(400);
      expect(fieldError(common.text, 'username')).to.equal(t('messages-signup:usernameCharacters'));
      expect(fieldError(common.text, 'password')).to.equal(t('messages-signup:passwordCommon'));

      const owner = await makeUser(idp.db);
      const taken = await fill(common, { username: owner.username, email: 'someone@example.test', password: 'a long new passphrase' }).expect(409);
      expectIn(taken, lang);
      expect(fieldError(taken.text, 'username')).to.equal(t('messages-signup:usernameTaken', { username: owner.username }));
    });

    it(`mails the sign-up link in ${lang}; its page, its wrong password and an address taken meanwhile in ${lang}`, async () => {
      const t = translator(lang);
      const browser = browserIn();
      const username = `signup-${lang}-${Date.now()}`;
      const email = `${username}@example.test`;
      const form = await browser.get('/signup').expect(200);
      await browser.fill(form, '/signup', { [t('signup:form.username')]: username, [t('signup:form.email')]: email, [t('signup:form.password')]: 'a long new passphrase' }).expect(302);
      const mail = await smtp.nextWith(email, t('mail:confirmSignup.subject'));
      expect(mail.html).to.include(`<html lang="${lang}">`).and.include(t('mail:confirmSignup.button'));
      expect(mail.text).to.include(t('mail:confirmSignup.askedText', { username, site: new URL(idp.url).host }));
      expectNoEnglish(`${mail.text} ${mail.html}`, `the ${lang} mail`);

      const link = linkIn(mail, idp.url);
      const confirm = await browser.get(`${link.pathname}${link.search}`).expect(200);
      expectIn(confirm, lang);
      expect(textOf(confirm)).to.include(email);
      const finish = (page: typeof confirm, password: string) => browser.fill(page, '/signup/confirm', { [t('signup:confirm.password')]: password });
      const wrong = await finish(confirm, 'not the password').expect(400);
      expectIn(wrong, lang);
      expect(fieldError(wrong.text, 'password')).to.equal(t('messages-signup:notChosenPassword'));

      // Another account took the address meanwhile: nothing is made, and the page says why in the reader's language.
      await makeUser(idp.db, { email });
      const taken = await finish(wrong, 'a long new passphrase').expect(409);
      expectIn(taken, lang);
      expect(taken.text).to.include(`<title>${t('signup:addressTaken.title')} · Horizon ID</title>`);
      expect(errorMessage(taken.text)).to.equal(t('messages-signup:addressTaken', { email }));
    });

    it(`mails the owner of an address signed up with again in ${lang}`, async () => {
      const t = translator(lang);
      const owner = await makeUser(idp.db);
      const browser = browserIn();
      const form = await browser.get('/signup').expect(200);
      await browser.fill(form, '/signup', { [t('signup:form.username')]: `other-${lang}-${Date.now()}`, [t('signup:form.email')]: owner.email, [t('signup:form.password')]: 'a long new passphrase' }).expect(302);
      const mail = await smtp.nextWith(owner.email, t('mail:addressInUse.signup.subject'));
      expect(mail.html).to.include(`<html lang="${lang}">`);
      expect(mail.text).to.include(t('mail:addressInUse.belongsText', { username: owner.username })).and.include(`${t('mail:seen.address')}:`);
      expectNoEnglish(`${mail.text} ${mail.html}`, `the ${lang} mail`);
    });

    it(`asks in ${lang} for a username to sign up with an upstream provider, and says a bad one is bad in ${lang}`, async () => {
      const t = translator(lang);
      const sub = `sub-${lang}-${Date.now()}`;
      // Verified by the provider in German, not verified in Japanese: both of the page's states.
      const verified = lang === 'de';
      upstream().state.person = { sub, email: `${sub}@upstream.test`, email_verified: verified, name: 'New Person', preferred_username: sub };
      const browser = browserIn();
      const signIn = await browser.get('/login').expect(200);
      const moving = await browser.fill(signIn, '/login/upstream/upstream').expect(200);
      const href = unescapeHtml(/href="([^"]+)" data-testid="upstream-continue"/.exec(moving.text)?.[1] ?? '');
      const signUp = await browser.follow(href).expect(200);
      expect(signUp.url.pathname).to.equal('/login/continue/sign-up');
      expectIn(signUp, lang);
      expect(textOf(signUp)).to.include(verified ? t('signup:upstreamSignUp.verifiedBy', { provider: 'Upstream' }) : t('signup:upstreamSignUp.notVerified'));
      const bad = await browser.fill(signUp, '/login/continue/sign-up', { [t('signup:upstreamSignUp.username')]: 'not a username!' }).expect(400);
      expectIn(bad, lang);
      expect(fieldError(bad.text, 'username')).to.equal(t('messages-signup:usernameCharacters'));
    });

    it(`mails a security notice of a change made on a ${lang} page in ${lang}`, async () => {
      const t = translator(lang);
      const user = await makeUser(idp.db);
      const browser = await signIn(new Browser(idp.url, { headers: { 'accept-language': lang } }), user);
      const page = await browser.get('/account/settings/password').expect(200);
      const form = formOf(page.text, '/account/settings/password');
      await browser.postForm(form.action, filled(form, { current_password: user.password, password: 'a new long passphrase', password_confirmation: 'a new long passphrase' })).expect(302);
      const mail = await smtp.nextWith(user.email, t('mail:notice.events.password-changed.subject'));
      expect(mail.html).to.include(`<html lang="${lang}">`);
      expect(mail.text).to.include(t('mail:notice.events.password-changed.what')).and.include(t('common:userAgent.unknown'));
      expectNoEnglish(`${mail.text} ${mail.html}`, `the ${lang} mail`);
    });

    it(`writes every notice and every mail of signing up and changing an address in ${lang}`, () => {
      const from = { ip: '192.0.2.7', userAgent: '', lang };
      const user = { id: 7, username: 'ada', email: 'ada@example.test' };
      const mails: Mail[] = [
        ...SECURITY_EVENTS.map((event) => securityNotice('https://id.example.test', user, event, from, { detail: 'Work laptop' })),
        securityNotice('https://id.example.test', user, 'password-reset', COMMAND_LINE, { lang }),
        addressInUseMail('https://id.example.test', user, 'signup', from),
        addressInUseMail('https://id.example.test', user, 'email-change', from),
      ];
      for (const mail of mails) {
        expect(mail.lang, mail.subject).to.equal(lang);
        const { text, html } = renderMail(mail);
        expect(html).to.include(`<html lang="${lang}">`);
        expectNoEnglish(`${mail.subject} ${text} ${html}`, `the ${lang} mail "${mail.subject}"`);
      }
      for (const template of ['confirm-signup', 'confirm-email-change'] as const) {
        const { text, html } = renderMail({ to: user.email, subject: 'x', template, data: { link: 'https://id.example.test/x', username: 'ada', email: 'new@example.test', site: 'id.example.test' }, lang });
        expectNoEnglish(`${text} ${html}`, `the ${lang} mail ${template}`);
      }
    });

    it(`says in ${lang} that the server is too busy to check a password`, async () => {
      const app = new Koa();
      app.use(refuseHashingWhenBusy({ full: () => true } as unknown as KdfQueue));
      const server = app.listen(0, '127.0.0.1');
      await once(server, 'listening');
      try {
        const { port } = server.address() as AddressInfo;
        const busy = await new Browser(`http://127.0.0.1:${port}`, { headers: { 'accept-language': lang } }).postForm('/signup', {}).expect(503);
        expectIn(busy, lang);
        expect(busy.headers.get('retry-after')).to.match(/^\d+$/);
        expect(textOf(busy)).to.include(translator(lang)('messages:busy'));
      } finally {
        server.close();
      }
    });
  }
});
