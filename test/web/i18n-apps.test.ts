import { expect } from 'chai';
import type { GroupRow } from '../../src/db/groups.js';
import { MAX_ACTIVE_SECRETS } from '../../src/services/apps.js';
import { translator, type Language } from '../../src/i18n.js';
import { useIdp } from '../helpers/app.js';
import { Browser, signIn, type Page } from '../helpers/browser.js';
import { makeApp, makeGroup, makeUser, type TestUser } from '../helpers/factories.js';
import { errorMessage, fieldError, formsOf } from '../helpers/html.js';
import { expectIn, textOf } from '../helpers/i18n-pages.js';

describe('A group\'s OAuth application pages in the reader\'s language', function () {
  this.timeout(60_000);
  const idp = useIdp('sqlite');

  it('keeps the English pages as they were', async () => {
    const { group, browser } = await ownerOf('en');
    const developer = await browser.get(developerOf(group)).expect(200);
    expect(developer.headers.get('content-language')).to.equal('en');
    expect(textOf(developer)).to.include('This group has no OAuth applications yet.');
    const form = await browser.get(`${developerOf(group)}/apps/new`).expect(200);
    const wrong = await browser.fill(form, '/apps', { 'Application name': '', 'Homepage URL': 'nope', 'Authorization callback URL': 'http://example.test/cb' }).expect(400);
    expect(fieldError(wrong.text, 'name')).to.equal('Application name is required');
    expect(fieldError(wrong.text, 'callbackURL')).to.equal('Authorization callback URL must use https (http only for localhost, 127.0.0.1 or [::1])');
  });

  async function ownerOf(lang: string): Promise<{ owner: TestUser; group: GroupRow; browser: Browser }> {
    const owner = await makeUser(idp.db);
    const group = await makeGroup(idp.db, owner.id, { name: `Screens ${lang}` });
    const browser = await signIn(new Browser(idp.url, { headers: { 'accept-language': lang } }), owner);
    return { owner, group, browser };
  }
  const developerOf = (group: GroupRow) => `/groups/${group.path}/settings/developer`;

  for (const lang of ['de', 'ja'] as Language[]) {
    it(`creates an application in ${lang}: the empty list, the form and its errors, the secret shown once, the list`, async () => {
      const t = translator(lang);
      const { group, browser } = await ownerOf(lang);
      const developer = developerOf(group);

      const empty = await browser.get(developer).expect(200);
      expectIn(empty, lang);
      expect(textOf(empty)).to.include(t('apps:developer.noApps'));

      const form = await browser.get(`${developer}/apps/new`).expect(200);
      expectIn(form, lang);
      expect(form.headers.get('content-language')).to.equal(lang);
      expect(form.text).to.include(`<title>${t('apps:titles.new', { group: group.name })}`);

      // Bad values, typed through the form's labels in the page's language: each error beside its field in that language.
      const label = (field: string) => t(`apps:labels.${field}`);
      const wrong = await browser.fill(form, '/apps', {
        [label('name')]: '',
        [label('homepageURL')]: 'not a url',
        [label('callbackURL')]: 'http://example.test/callback',
        [label('signOutRedirectURLs')]: 'https://ok.example.test/\n\nnot a url\nhttp://example.test/bye',
      }).expect(400);
      expectIn(wrong, lang);
      expect(fieldError(wrong.text, 'name')).to.equal(t('messages-apps:nameRequired'));
      expect(fieldError(wrong.text, 'homepageURL')).to.equal(t('messages-apps:homepageInvalid'));
      expect(fieldError(wrong.text, 'callbackURL')).to.equal(t('messages-apps:callbackHttps'));
      expect(fieldError(wrong.text, 'signOutRedirectURLs')).to.equal(
        [t('messages-apps:signOutLineNotAbsolute', { line: 3 }), t('messages-apps:signOutLineHttps', { line: 4 })].join(t('messages-apps:_lineSeparator')),
      );

      // A public application may not use localhost: the error the service adds after the schema's.
      const local = await browser.fill(wrong, '/apps', {
        [label('name')]: 'Kiosk',
        [label('homepageURL')]: 'https://kiosk.example.test',
        [label('callbackURL')]: 'http://localhost:8080/cb',
        [label('signOutRedirectURLs')]: '',
        [t('apps:types.public')]: 'checked',
      }).expect(400);
      expectIn(local, lang);
      expect(fieldError(local.text, 'callbackURL')).to.equal(t('messages-apps:callbackLocalhost'));

      const created = await browser.fill(local, '/apps', {
        [label('name')]: 'Deploy Bot',
        [label('homepageURL')]: 'https://deploy.example.test',
        [label('callbackURL')]: 'https://deploy.example.test/callback',
        [t('apps:types.confidential')]: 'checked',
      }).expect(302);
      const withSecret = await browser.follow(created).expect(200);
      expectIn(withSecret, lang);
      expect(withSecret.text).to.include('data-testid="new-secret-box"');
      expect(textOf(withSecret)).to.include(t('apps:notices.createdNow'));

      // Once: the same page again has no secret, and lists the secret with its date in the page's language.
      const again = await browser.get(withSecret.url).expect(200);
      expectIn(again, lang);
      expect(again.text).not.to.include('data-testid="new-secret-box"');
      expect(again.text).to.include('data-testid="secret-row"');
      expect(textOf(again)).to.include(t('apps:app.never')).and.include(t('apps:app.users', { count: 0 }));

      const list = await browser.get(developer).expect(200);
      expectIn(list, lang);
      expect(list.text).to.include('data-testid="app-row"');
      expect(textOf(list)).to.include(' UTC').and.include('Deploy Bot');
    });

    it(`manages an application in ${lang}: its page, its notices, a refused secret, revoking every token, deleting it`, async () => {
      const t = translator(lang);
      const { owner, group, browser } = await ownerOf(lang);
      const { clientId } = await makeApp(idp.db, owner.id, group.id, { name: 'TV App', deviceFlow: true });
      const appPage = `${developerOf(group)}/apps/${clientId}`;

      const page = await browser.get(appPage).expect(200);
      expectIn(page, lang);
      expect(textOf(page)).to.include(t('apps:app.deviceFlowOn')).and.include(t('apps:types.confidential'));
      expect(page.text).to.include(`<title>${t('apps:titles.app', { app: 'TV App', group: group.name })}`);

      // The edit form: a bad value beside its field, then a change and its notice.
      const wrong = await browser.fill(page, `/apps/${clientId}`, { [t('apps:labels.callbackURL')]: 'https://tv.example.test/cb#top' }).expect(400);
      expectIn(wrong, lang);
      expect(fieldError(wrong.text, 'callbackURL')).to.equal(t('messages-apps:callbackFragment'));
      const changed = await browser.follow(await browser.fill(page, `/apps/${clientId}`, { [t('apps:labels.name')]: 'TV App 2' }).expect(302)).expect(200);
      expectIn(changed, lang);
      expect(textOf(changed)).to.include(t('apps:notices.updated'));

      // As many secrets as an application holds: the next one is refused, in the page's language.
      // The form that generates a secret (the revoke forms post to …/secrets/<id>/revoke).
      const generate = (on: Page) => {
        const form = formsOf(on.text, '/secrets').find(({ action }) => action.endsWith('/secrets'))!;
        return browser.postForm(form.action, form.fields);
      };
      let latest: Page = changed;
      for (let i = 1; i < MAX_ACTIVE_SECRETS; i += 1) latest = await browser.follow(await generate(latest).expect(302)).expect(200);
      expectIn(latest, lang);
      expect(textOf(latest)).to.include(t('apps:app.secretLimit', { max: MAX_ACTIVE_SECRETS }));
      const refused = await generate(latest).expect(409);
      expectIn(refused, lang);
      expect(errorMessage(refused.text)).to.equal(t('messages-apps:secretLimit', { max: MAX_ACTIVE_SECRETS }));

      const revokeSecret = await browser.follow(await browser.fill(latest, '/revoke').expect(302)).expect(200);
      expectIn(revokeSecret, lang);
      expect(textOf(revokeSecret)).to.include(t('apps:notices.secretRevoked'));

      const revokeTokens = await browser.get(`${appPage}/revoke-tokens`).expect(200);
      expectIn(revokeTokens, lang);
      const revoked = await browser.follow(await browser.fill(revokeTokens, '/revoke-tokens').expect(302)).expect(200);
      expectIn(revoked, lang);
      expect(textOf(revoked)).to.include(t('apps:notices.tokensRevoked'));

      const remove = await browser.get(`${appPage}/delete`).expect(200);
      expectIn(remove, lang);
      const deleted = await browser.follow(await browser.fill(remove, '/delete').expect(302)).expect(200);
      expectIn(deleted, lang);
      expect(textOf(deleted)).to.include(t('apps:notices.deleted')).and.include(t('apps:developer.noApps'));
    });

    it(`shows a public application in ${lang}, which has no secret`, async () => {
      const t = translator(lang);
      const { owner, group, browser } = await ownerOf(lang);
      const { clientId } = await makeApp(idp.db, owner.id, group.id, { name: 'Phone App', type: 'public', requirePushedAuthorizationRequests: true });
      const page = await browser.get(`${developerOf(group)}/apps/${clientId}?notice=created`).expect(200);
      expectIn(page, lang);
      expect(textOf(page)).to.include(t('apps:notices.createdPublic')).and.include(t('apps:app.parOn')).and.include(t('apps:types.public'));
      const revokeTokens = await browser.get(`${developerOf(group)}/apps/${clientId}/revoke-tokens`).expect(200);
      expectIn(revokeTokens, lang);
      expect(textOf(revokeTokens)).to.include(t('apps:revokeTokens.warningPublic'));
    });
  }
});
