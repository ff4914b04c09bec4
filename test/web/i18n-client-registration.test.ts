import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { setUserAdmin } from '../../src/db/admin.js';
import { translator, type Language } from '../../src/i18n.js';
import { useIdp } from '../helpers/app.js';
import { Browser, signIn } from '../helpers/browser.js';
import { makeApp, makeGroup, makeUser, type TestUser } from '../helpers/factories.js';
import { fieldError, fillForm } from '../helpers/html.js';
import { expectIn, textOf } from '../helpers/i18n-pages.js';

const unique = () => randomBytes(3).toString('hex');
const LANGS: Language[] = ['de', 'ja'];

describe('Client registration and self-registered applications in the reader\'s language', function () {
  this.timeout(60_000);
  const idp = useIdp('sqlite');
  let admin: TestUser;
  let group: { id: number; path: string };
  let clientId: string;
  const browsers = {} as Record<Language, Browser>;

  before(async () => {
    admin = await makeUser(idp.db, { username: `root-${unique()}` });
    await setUserAdmin(idp.db, admin.id, true);
    group = await makeGroup(idp.db, admin.id);
    clientId = (await makeApp(idp.db, admin.id, group.id, { name: 'Agent', type: 'public' })).clientId;
    await idp.db('oauth_apps').where({ client_id: clientId }).update({ registered_by: 'metadata_document', registered_from: 'agent.example.test' });
    for (const lang of LANGS) browsers[lang] = await signIn(new Browser(idp.url, { headers: { 'accept-language': lang } }), admin);
  });

  for (const lang of LANGS) {
    it(`shows Admin → Client registration in ${lang}: its tab, its fields, its refusals and its notice`, async () => {
      const t = translator(lang);
      const browser = browsers[lang];
      const page = await browser.get('/admin/client-registration').expect(200);
      expectIn(page, lang);
      expect(page.text).to.include(`<title>${t('admin:titles.clientRegistration')}`);
      expect(textOf(page)).to.include(t('admin:tabs.clientRegistration')).and.include(t('admin:clientRegistration.risk')).and.include(t('admin:clientRegistration.metadataIntro'));

      const label = (field: string) => t(`admin:clientRegistration.labels.${field}`);
      const { action, fields } = fillForm(page.text, '/admin/client-registration', { [label('dynamicRegistration')]: 'checked', [label('group')]: '' });
      const refused = await browser.request(new URL(action, page.url), { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: fields.toString() }).expect(400);
      expectIn(refused, lang);
      expect(fieldError(refused.text, 'group')).to.equal(t('messages-admin:registrationGroupRequired'));

      const again = fillForm(refused.text, '/admin/client-registration', { [label('group')]: group.path });
      await browser.request(new URL(again.action, page.url), { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: again.fields.toString() }).expect(302, '/admin/client-registration?notice=saved');
      const saved = await browser.get('/admin/client-registration?notice=saved').expect(200);
      expectIn(saved, lang);
      expect(/data-testid="notice">([^<]*)</.exec(saved.text)?.[1]).to.equal(t('admin:clientRegistration.saved'));
    });

    it(`marks a self-registered application in ${lang}, in the list and on its page`, async () => {
      const t = translator(lang);
      const list = await browsers[lang].get(`/groups/${group.path}/settings/developer`).expect(200);
      expectIn(list, lang);
      expect(textOf(list)).to.include(t('apps:registered.badge'));
      const page = await browsers[lang].get(`/groups/${group.path}/settings/developer/apps/${clientId}`).expect(200);
      expectIn(page, lang);
      expect(textOf(page)).to.include(t('apps:registered.metadataDocument', { from: 'agent.example.test' })).and.include(t('apps:registered.settings'));
    });
  }
});
