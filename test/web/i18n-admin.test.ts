import { actionName } from '../../src/presenters/audit.js';
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { setUserAdmin } from '../../src/db/admin.js';
import { translator, type Language } from '../../src/i18n.js';
import { useIdp } from '../helpers/app.js';
import { Browser, signIn, type Page } from '../helpers/browser.js';
import { makeUser, type TestUser } from '../helpers/factories.js';
import { fieldError, fillForm, formOf } from '../helpers/html.js';
import { expectIn, textOf } from '../helpers/i18n-pages.js';
import { withTwoFactor } from '../helpers/totp.js';

const unique = () => randomBytes(3).toString('hex');
const LANGS: Language[] = ['de', 'ja'];

/** The text between data-testid="notice" and its end tag. */
function notice(page: Page): string | undefined {
  return /data-testid="notice">([^<]*)</.exec(page.text)?.[1];
}

describe('The Admin area in the reader\'s language', function () {
  this.timeout(60_000);
  const idp = useIdp('sqlite');
  let admin: TestUser;
  const browsers = {} as Record<Language, Browser>;

  before(async () => {
    admin = await makeUser(idp.db, { username: `root-${unique()}` });
    // Made an administrator without the audit log's entry that setSiteAdmin writes, so that the log starts empty.
    await setUserAdmin(idp.db, admin.id, true);
    for (const lang of LANGS) browsers[lang] = await signIn(new Browser(idp.url, { headers: { 'accept-language': lang } }), admin);
  });

  it('keeps the Admin area English for a reader who asks for no other language', async () => {
    const english = await signIn(new Browser(idp.url, { headers: { 'accept-language': 'fr' } }), admin);
    const page = await english.get('/admin/users').expect(200);
    expect(page.text).to.include('<html lang="en">').and.include('<h1>Users</h1>').and.include('placeholder="Username, e-mail or name"');
    expect(page.headers.get('content-language')).to.equal('en');
  });

  // First, before any administrator acts: the empty log's own words.
  for (const lang of LANGS) {
    it(`shows the empty audit log and the empty list of sign-in providers in ${lang}`, async () => {
      const t = translator(lang);
      const audit = await browsers[lang].get('/admin/audit').expect(200);
      expectIn(audit, lang);
      expect(textOf(audit)).to.include(t('admin:audit.none')).and.include(t('admin:audit.heading'));
      expect(audit.text).to.include(`<title>${t('admin:titles.audit')}`);

      const providers = await browsers[lang].get('/admin/providers').expect(200);
      expectIn(providers, lang);
      expect(textOf(providers)).to.include(t('admin:providers.none')).and.include(t('admin:providers.add'));
    });
  }

  for (const lang of LANGS) {
    it(`lists, searches and shows users in ${lang}, disables and enables one with its notices`, async () => {
      const t = translator(lang);
      const browser = browsers[lang];
      const someone = await makeUser(idp.db, { username: `someone-${lang}-${unique()}`, name: 'Some One' });

      const list = await browser.get('/admin/users').expect(200);
      expectIn(list, lang);
      expect(list.text).to.include(`placeholder="${t('admin:users.placeholder')}"`).and.include(`data-label="${t('admin:users.username')}"`);
      expect(textOf(list)).to.include(t('admin:status.admin'));

      const none = await browser.get(`/admin/users?q=nobody-${unique()}`).expect(200);
      expectIn(none, lang);
      expect(textOf(none)).to.include(t('admin:users.clear'));

      const beyond = await browser.get('/admin/users?page=99').expect(200);
      expectIn(beyond, lang);

      const own = await browser.get(`/admin/users/${admin.id}`).expect(200);
      expectIn(own, lang);
      expect(textOf(own)).to.include(t('admin:user.self')).and.include(t('admin:user.twoFactorOff'));

      const page = await browser.get(`/admin/users/${someone.id}`).expect(200);
      expectIn(page, lang);
      expect(textOf(page)).to.include(t('admin:user.disabling'));

      const confirm = await browser.get(`/admin/users/${someone.id}/disable`).expect(200);
      expectIn(confirm, lang);
      expect(textOf(confirm)).to.include(t('admin:disable.warning'));

      const disable = formOf(confirm.text, `/admin/users/${someone.id}/disable`);
      const disabled = await browser.follow(await browser.postForm(disable.action, disable.fields).expect(302)).expect(200);
      expectIn(disabled, lang);
      expect(notice(disabled)).to.equal(t('admin:userNotices.disabled'));
      expect(textOf(disabled)).to.include(t('admin:user.isDisabled')).and.include(t('admin:status.disabled'));

      const enable = formOf(disabled.text, `/admin/users/${someone.id}/enable`);
      const enabled = await browser.follow(await browser.postForm(enable.action, enable.fields).expect(302)).expect(200);
      expectIn(enabled, lang);
      expect(notice(enabled)).to.equal(t('admin:userNotices.enabled'));
    });
  }

  for (const lang of LANGS) {
    it(`shows a user's two-factor authentication in ${lang}, and resets it with its notice`, async () => {
      const t = translator(lang);
      const browser = browsers[lang];
      const person = await makeUser(idp.db, { username: `twofa-${lang}-${unique()}` });
      await withTwoFactor(idp.db, person);
      const page = await browser.get(`/admin/users/${person.id}`).expect(200);
      expectIn(page, lang);
      expect(textOf(page)).to.include(t('admin:user.passkeys', { count: 0 })).and.include(t('admin:user.resetTwoFactor'));
      expect(page.text).to.include(`data-confirm="${t('admin:user.resetConfirm', { username: person.username })}"`);
      const reset = formOf(page.text, `/admin/users/${person.id}/two-factor-reset`);
      const done = await browser.follow(await browser.postForm(reset.action, reset.fields).expect(302)).expect(200);
      expectIn(done, lang);
      expect(notice(done)).to.equal(t('admin:userNotices.two-factor-reset'));
    });
  }

  for (const lang of LANGS) {
    it(`adds a sign-in provider in ${lang}: the kind, the form's errors in ${lang} beside their fields, its page, Edit, Disable and Remove`, async () => {
      const t = translator(lang);
      const browser = browsers[lang];
      const slug = `corp-${lang}-${unique()}`;

      const picker = await browser.get('/admin/providers/new').expect(200);
      expectIn(picker, lang);
      expect(textOf(picker)).to.include(t('admin:kind.question'));
      const chosen = fillForm(picker.text, '/admin/providers/new', { 'OpenID Connect': 'checked' });
      const form = await browser.get(`${chosen.action}?${chosen.fields.toString()}`).expect(200);
      expectIn(form, lang);
      expect(textOf(form)).to.include(t('admin:kinds.oidc.issuer.hint'));

      // A hand-made form without a kind: the kind's page again, with its message.
      const noKind = await browser.postForm('/admin/providers', { _csrf: formOf(form.text, '/admin/providers').fields._csrf! }).expect(400);
      expectIn(noKind, lang);
      expect(textOf(noKind)).to.include(t('admin:kind.choose'));

      const labels = {
        name: t('admin:labels.name'),
        slug: t('admin:labels.slug'),
        issuer: t('admin:kinds.oidc.issuer.label'),
        clientId: t('admin:labels.client_id'),
        secret: t('admin:labels.client_secret'),
        position: t('admin:labels.position'),
      };
      const wrong = await browser.fill(form, '/admin/providers', {
        [labels.name]: 'x'.repeat(61),
        [labels.slug]: '',
        [labels.issuer]: 'not a url',
        [labels.clientId]: `client-${slug}`,
        [labels.secret]: 's3cret-value',
        [labels.position]: 'first',
      }).expect(400);
      expectIn(wrong, lang);
      expect(fieldError(wrong.text, 'name')).to.equal(t('messages-admin:nameTooLong', { max: 60 }));
      expect(fieldError(wrong.text, 'slug')).to.equal(t('messages-admin:slugRequired'));
      expect(fieldError(wrong.text, 'issuer')).to.equal(t('messages-admin:issuerNotAbsolute'));
      expect(fieldError(wrong.text, 'position')).to.equal(t('messages-admin:positionInvalid', { max: 9999 }));

      const added = await browser.follow(await browser.fill(wrong, '/admin/providers', {
        [labels.name]: `Corp ${lang}`,
        [labels.slug]: slug,
        [labels.issuer]: 'https://sso.example.com',
        [labels.secret]: 's3cret-value',
        [labels.position]: '',
      }).expect(302)).expect(200);
      expectIn(added, lang);
      expect(notice(added)).to.equal(t('admin:providerNotices.added'));
      expect(textOf(added)).to.include(t('admin:provider.callbackIntro')).and.include(t('admin:kinds.oidc.issuer.label'));

      const list = await browser.get('/admin/providers').expect(200);
      expectIn(list, lang);
      expect(textOf(list)).to.include(`Corp ${lang}`).and.include(t('admin:status.enabled'));

      const edit = await browser.get(`/admin/providers/${slug}/edit`).expect(200);
      expectIn(edit, lang);
      expect(textOf(edit)).to.include(t('admin:form.secretKeepHint'));
      const taken = await browser.fill(edit, `/admin/providers/${slug}/edit`, { [labels.slug]: 'admin' }).expect(400);
      expectIn(taken, lang);
      expect(fieldError(taken.text, 'slug')).to.equal(t('messages-admin:slugReserved', { slug: 'admin' }));
      const unchanged = await browser.follow(await browser.fill(edit, `/admin/providers/${slug}/edit`).expect(302)).expect(200);
      expectIn(unchanged, lang);
      expect(notice(unchanged)).to.equal(t('admin:providerNotices.unchanged'));

      const disable = formOf(unchanged.text, `/admin/providers/${slug}/disable`);
      const disabled = await browser.follow(await browser.postForm(disable.action, disable.fields).expect(302)).expect(200);
      expectIn(disabled, lang);
      expect(notice(disabled)).to.equal(t('admin:providerNotices.disabled'));
      expect(textOf(disabled)).to.include(t('admin:provider.isDisabled'));

      const remove = await browser.get(`/admin/providers/${slug}/remove`).expect(200);
      expectIn(remove, lang);
      expect(textOf(remove)).to.include(t('admin:remove.everyOther')).and.include(t('admin:remove.disableInstead'));

      const confirm = formOf(remove.text, `/admin/providers/${slug}/remove`);
      const removed = await browser.follow(await browser.postForm(confirm.action, confirm.fields).expect(302)).expect(200);
      expectIn(removed, lang);
      expect(notice(removed)).to.equal(t('admin:providerNotices.removed'));
    });
  }

  for (const lang of LANGS) {
    it(`shows the audit log with entries in ${lang}, each action in words of ${lang}`, async () => {
      const t = translator(lang);
      const audit = await browsers[lang].get('/admin/audit').expect(200);
      expectIn(audit, lang);
      expect(audit.text).to.include('data-testid="audit-row"');
      expect(audit.text).to.include(`<th>${t('admin:audit.when')}</th>`).and.include(`data-label="${t('admin:audit.action')}"`);
      // The earlier tests disabled and enabled a user: those rows, in this language's words.
      expect(textOf(audit)).to.include(actionName('user.disable', lang)).and.include(actionName('user.enable', lang));
    });
  }
});
