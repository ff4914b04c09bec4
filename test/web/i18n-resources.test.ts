import { expect } from 'chai';
import { translator, type Language } from '../../src/i18n.js';
import { useIdp } from '../helpers/app.js';
import { Browser, signIn, type Page } from '../helpers/browser.js';
import { makeGroup, makeUser } from '../helpers/factories.js';
import { fieldError, formAction } from '../helpers/html.js';
import { expectIn, textOf } from '../helpers/i18n-pages.js';

describe('Resources pages in the reader\'s language', function () {
  this.timeout(60_000);
  const idp = useIdp('sqlite');

  for (const lang of ['de', 'ja'] as Language[]) {
    const t = translator(lang);
    const notice = (page: Page) => /data-testid="notice">([^<]*)</.exec(page.text)?.[1];

    it(`registers a resource through its form in ${lang}, its errors in ${lang}, and shows its secret, edit, new secret and deletion in ${lang}`, async () => {
      const owner = await makeUser(idp.db);
      const group = await makeGroup(idp.db, owner.id);
      const browser = await signIn(new Browser(idp.url, { headers: { 'accept-language': lang } }), owner);
      const base = `/groups/${group.path}/settings/resources`;
      const identifier = `https://tools-${lang}.example.test/mcp`;

      const empty = await browser.get(base).expect(200);
      expectIn(empty, lang);
      expect(textOf(empty)).to.include(t('resources:list.empty')).and.include(t('common:groupNav.resources'));

      const labels = {
        identifier: t('resources:labels.identifier'),
        name: t('resources:labels.name'),
        jwt: t('resources:formats.jwt.name'),
        scope: (n: number) => t('resources:form.scopeNameOf', { n }),
        description: (n: number) => t('resources:form.scopeDescriptionOf', { n }),
      };
      // Register resource: a bad identifier, a scope without a description and a reserved scope, each refused beside its field in the page's language.
      const form = await browser.get(`${base}/new`).expect(200);
      expectIn(form, lang);
      const bad = await browser.fill(form, '/resources/new', {
        [labels.identifier]: 'kein-url', [labels.name]: 'Werkzeuge', [labels.scope(1)]: 'tools:read', [labels.scope(2)]: 'openid', [labels.description(2)]: 'x',
      }).expect(400);
      expectIn(bad, lang);
      expect(fieldError(bad.text, 'identifier')).to.equal(t('messages-resources:identifierAbsolute'));
      expect(fieldError(bad.text, 'scope-0')).to.equal(t('messages-resources:scopeDescriptionRequired'));
      expect(fieldError(bad.text, 'scope-1')).to.equal(t('messages-resources:scopeNameReserved'));
      const none = await browser.fill(bad, '/resources/new', {
        [labels.identifier]: identifier, [labels.scope(1)]: '', [labels.scope(2)]: '', [labels.description(2)]: '',
      }).expect(400);
      expectIn(none, lang);
      expect(fieldError(none.text, 'scopes')).to.equal(t('messages-resources:scopesNone'));
      const twice = await browser.fill(none, '/resources/new', {
        [labels.scope(1)]: 'tools:read', [labels.description(1)]: 'Lesen', [labels.scope(2)]: 'tools:read', [labels.description(2)]: 'Nochmal',
      }).expect(400);
      expect(fieldError(twice.text, 'scopes')).to.equal(t('messages-resources:scopesTwice', { scope: 'tools:read' }));

      const made = await browser.fill(twice, '/resources/new', { [labels.scope(2)]: '', [labels.description(2)]: '' }).expect(302);
      const page = await browser.follow(made).expect(200);
      expectIn(page, lang);
      expect(notice(page)).to.equal(t('resources:notices.createdNow'));
      expect(page.text).to.include('data-testid="introspection-secret"');
      const href = made.headers.get('location')!.replace(/\?.*$/, '');

      // Another group cannot take the identifier: said in the page's language.
      const other = await makeGroup(idp.db, owner.id);
      const taken = await browser.fill(await browser.get(`/groups/${other.path}/settings/resources/new`).expect(200), '/resources/new', {
        [labels.identifier]: identifier, [labels.name]: 'Doppelt', [labels.scope(1)]: 'a', [labels.description(1)]: 'b',
      }).expect(409);
      expectIn(taken, lang);
      expect(fieldError(taken.text, 'identifier')).to.equal(t('messages-resources:identifierTaken'));

      const list = await browser.get(base).expect(200);
      expectIn(list, lang);
      expect(textOf(list)).to.include(t('resources:formats.opaque.short')).and.include(t('resources:list.scopeCount', { count: 1 }));

      const refused = await browser.fill(page, href, { [labels.identifier]: 'https://tools.example.test/#x' }).expect(400);
      expectIn(refused, lang);
      expect(fieldError(refused.text, 'identifier')).to.equal(t('messages-resources:identifierFragment'));
      const saved = await browser.follow(await browser.fill(refused, href, { [labels.identifier]: identifier, [labels.jwt]: 'checked' }).expect(302)).expect(200);
      expectIn(saved, lang);
      expect(notice(saved)).to.equal(t('resources:notices.saved'));
      expect(textOf(saved)).to.include(t('resources:resource.jwks'));

      const fresh = await browser.follow(await browser.submit(formAction(saved.text, '/secret')).expect(302)).expect(200);
      expectIn(fresh, lang);
      expect(notice(fresh)).to.equal(t('resources:notices.secretNow'));

      const ask = await browser.get(`${href}/delete`).expect(200);
      expectIn(ask, lang);
      const gone = await browser.follow(await browser.fill(ask, `${href}/delete`).expect(302)).expect(200);
      expectIn(gone, lang);
      expect(notice(gone)).to.equal(t('resources:notices.deleted'));

      const missing = await browser.get(href).expect(404);
      expect(textOf(missing)).to.include(t('messages-resources:noResourceHere'));

      const audit = await browser.get(`/groups/${group.path}/settings/audit`).expect(200);
      expectIn(audit, lang);
      expect(textOf(audit)).to.include(t('audit:resource.create')).and.include(t('resources:labels.tokenFormat'));
    });
  }
});
