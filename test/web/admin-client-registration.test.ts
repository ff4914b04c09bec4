import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { setSiteAdmin } from '../../src/services/admin.js';
import { clientRegistrationSettings } from '../../src/services/client-registration/settings.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { Browser, signIn, visit, type Page } from '../helpers/browser.js';
import { makeGroup, makeUser, type TestUser } from '../helpers/factories.js';
import { fieldError, fillForm, inputValue, parseForm, unescapeHtml } from '../helpers/html.js';

const CLI = { userId: 0, ip: null, admin: true };
const unique = () => randomBytes(4).toString('hex');

/** The page's labels: a person finds the fields by them. */
const METADATA = 'Accept Client ID Metadata Documents';
const DYNAMIC = 'Accept Dynamic Client Registration';
const GROUP = 'Group';

describeEachProfile('Admin → Client registration', (profile) => {
  const idp = useIdp(profile);
  let admin: TestUser;
  let site: Browser;

  before(async () => {
    admin = await makeUser(idp.db, { username: `root-${unique()}` });
    await setSiteAdmin(idp.db, CLI, admin, true);
    site = await signIn(idp.url, admin);
  });

  /** Fills the page's own form by its labels and posts it. */
  function save(page: Page, byLabel: Record<string, string>) {
    return site.fill(page, '/admin/client-registration', byLabel);
  }

  const checked = (page: Page, label: string) => parseForm(page.text, '/admin/client-registration').controls.find((c) => c.label === label)?.checked;
  const notice = (page: Page) => /data-testid="notice">([^<]*)</.exec(page.text)?.[1];

  it('is a tab of the Admin area, and says where clients register', async () => {
    const users = await site.get('/admin/users').expect(200);
    expect(users.text).to.contain('href="/admin/client-registration"');
    const page = await site.get('/admin/client-registration').expect(200);
    expect(page.text).to.contain('href="/admin/client-registration" class="active" aria-current="page"');
    expect(unescapeHtml(/value="([^"]*)" data-testid="registration-endpoint"/.exec(page.text)![1]!)).to.equal(`${idp.url}/login/oauth/register`);
    expect(page.text).to.contain('Clients that use metadata documents need nothing from this site');
    expect(page.text).to.contain('Anyone can register a client this way; the consent page tells people it was not reviewed.');
  });

  it('turns both ways on with a group, then off again, each time after a redirect that says Saved, recorded in the site audit log', async () => {
    const owner = await makeUser(idp.db);
    const group = await makeGroup(idp.db, owner.id);
    const page = await site.get('/admin/client-registration').expect(200);
    expect(checked(page, METADATA)).to.equal(false);
    expect(checked(page, DYNAMIC)).to.equal(false);

    await save(page, { [METADATA]: 'checked', [DYNAMIC]: 'checked', [GROUP]: group.path }).expect(302, '/admin/client-registration?notice=saved');
    const saved = await site.get('/admin/client-registration?notice=saved').expect(200);
    expect(notice(saved)).to.equal('Saved');
    expect(checked(saved, METADATA)).to.equal(true);
    expect(checked(saved, DYNAMIC)).to.equal(true);
    expect(inputValue(saved.text, 'group')).to.equal(group.path);
    expect(await clientRegistrationSettings(idp.db)).to.deep.include({ metadataDocuments: true, dynamicRegistration: true });
    expect((await clientRegistrationSettings(idp.db)).group?.path).to.equal(group.path);

    const audit = await idp.db('audit_events').where({ action: 'client_registration.update' }).orderBy('id', 'desc').first();
    expect(audit).to.include({ actor_id: admin.id, target: group.path });
    expect(audit.group_id).to.equal(null);
    expect(JSON.parse(audit.details)).to.deep.equal({ metadataDocuments: true, dynamicRegistration: true });
    const log = await site.get('/admin/audit').expect(200);
    expect(log.text).to.contain('Client registration changed');

    // Only one way on; the group stays.
    await save(saved, { [DYNAMIC]: 'unchecked' }).expect(302, '/admin/client-registration?notice=saved');
    expect(await clientRegistrationSettings(idp.db)).to.deep.include({ metadataDocuments: true, dynamicRegistration: false });

    // Both off, and no group: allowed.
    const again = await site.get('/admin/client-registration').expect(200);
    await save(again, { [METADATA]: 'unchecked', [GROUP]: '' }).expect(302, '/admin/client-registration?notice=saved');
    const off = await clientRegistrationSettings(idp.db);
    expect(off).to.deep.include({ metadataDocuments: false, dynamicRegistration: false, group: null });
  });

  it('refuses a switch without a group, or an unknown group, naming the field and keeping what was typed', async () => {
    const page = await site.get('/admin/client-registration').expect(200);
    const before = await idp.db('audit_events').where({ action: 'client_registration.update' }).count({ n: '*' }).first();

    const noGroup = await save(page, { [METADATA]: 'checked', [GROUP]: '' }).expect(400);
    expect(fieldError(noGroup.text, 'group')).to.equal('Group is required while client registration is on: it owns the clients that register');
    expect(checked(noGroup, METADATA)).to.equal(true);
    expect(checked(noGroup, DYNAMIC)).to.equal(false);

    const typed = `no-such-group-${unique()}`;
    const unknown = await save(noGroup, { [DYNAMIC]: 'checked', [GROUP]: typed }).expect(400);
    expect(fieldError(unknown.text, 'group')).to.equal('Group must be the path of an existing group');
    expect(inputValue(unknown.text, 'group')).to.equal(typed);
    expect(checked(unknown, METADATA)).to.equal(true);
    expect(checked(unknown, DYNAMIC)).to.equal(true);
    expect(unknown.text).to.contain('aria-invalid=true');

    const long = await save(unknown, { [GROUP]: 'g'.repeat(101) }).expect(400);
    expect(fieldError(long.text, 'group')).to.equal('Group must be at most 100 characters');

    const after = await idp.db('audit_events').where({ action: 'client_registration.update' }).count({ n: '*' }).first();
    expect(Number(after?.n)).to.equal(Number(before?.n));
  });

  it('says the errors in German and Japanese too', async () => {
    for (const [lang, expected] of [['de', 'Gruppe muss der Pfad einer bestehenden Gruppe sein'], ['ja', 'グループには既存のグループのパスを指定してください']] as const) {
      const browser = await signIn(new Browser(idp.url, { headers: { 'accept-language': lang } }), admin);
      const page = await browser.get('/admin/client-registration').expect(200);
      const { action, fields } = fillForm(page.text, '/admin/client-registration');
      fields.set('group', `nothing-${unique()}`);
      fields.set('metadataDocuments', 'on');
      const refused = await browser.request(new URL(action, page.url), { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: fields.toString() }).expect(400);
      expect(fieldError(refused.text, 'group')).to.equal(expected);
    }
  });

  it('is an unknown address to anyone but a site administrator, and their form changes nothing', async () => {
    const visitor = await visit(idp.url);
    const member = await signIn(idp.url, await makeUser(idp.db));
    const owner = await makeUser(idp.db);
    const group = await makeGroup(idp.db, owner.id);
    for (const who of [visitor, member]) {
      for (const method of ['GET', 'POST'] as const) {
        const nothing = await who.request(`/nothing-here/admin/client-registration`, { method, headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: '' });
        const res = await who.request('/admin/client-registration', { method, headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: '' });
        expect(nothing.status).to.equal(404);
        expect({ status: res.status, type: res.headers.get('content-type'), body: res.text }, `${method}`).to.deep.equal({ status: nothing.status, type: nothing.headers.get('content-type'), body: nothing.text });
      }
      await who.submit('/admin/client-registration', { metadataDocuments: 'on', group: group.path }).expect(404);
    }
    expect((await clientRegistrationSettings(idp.db)).metadataDocuments).to.equal(false);
  });
});
