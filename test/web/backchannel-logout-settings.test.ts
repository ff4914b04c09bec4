import { expect } from 'chai';
import { translator, type Language } from '../../src/i18n.js';
import { call, expectApiError, type ApiResponse } from '../helpers/api.js';
import { describeEachProfile, useDatabase, useIdp } from '../helpers/app.js';
import { Browser, signIn } from '../helpers/browser.js';
import { idp as cli, json, refusal } from '../helpers/cli.js';
import { makeGroup, makeUser, personalToken } from '../helpers/factories.js';
import { fieldError } from '../helpers/html.js';
import { expectIn, textOf } from '../helpers/i18n-pages.js';

const HTTPS_RULE = 'must use https (http only for localhost, 127.0.0.1 or [::1])';
const VALID = { name: 'Notified', homepageURL: 'https://rp.example.test', callbackURL: 'https://rp.example.test/cb' };

/** Registering a back-channel logout URL: the application form in every language, the API, the CLI. */
describe('the back-channel logout URL of an application', function () {
  this.timeout(60_000);
  const server = useIdp('sqlite');

  async function ownerOf(lang: Language) {
    const owner = await makeUser(server.db);
    const group = await makeGroup(server.db, owner.id);
    const browser = await signIn(new Browser(server.url, { headers: { 'accept-language': lang } }), owner);
    return { owner, group, browser, developer: `/groups/${group.path}/settings/developer` };
  }

  for (const lang of ['en', 'de', 'ja'] as Language[]) {
    it(`is set, refused when not https, changed and removed on the application's pages (${lang})`, async () => {
      const t = translator(lang);
      const label = (field: string) => t(`apps:labels.${field}`);
      const { browser, developer } = await ownerOf(lang);
      const form = await browser.get(`${developer}/apps/new`).expect(200);
      expect(textOf(form)).to.include(t('apps:hints.backchannelLogoutURL'));
      const base = { [label('name')]: 'Notified', [label('homepageURL')]: 'https://rp.example.test', [label('callbackURL')]: 'https://rp.example.test/cb' };

      const wrong = await browser.fill(form, '/apps', { ...base, [label('backchannelLogoutURL')]: 'http://rp.example.test/logout' }).expect(400);
      if (lang !== 'en') expectIn(wrong, lang);
      expect(fieldError(wrong.text, 'backchannelLogoutURL')).to.equal(t('messages-apps:backchannelLogoutHttps'));
      const fragment = await browser.fill(wrong, '/apps', { ...base, [label('backchannelLogoutURL')]: 'https://rp.example.test/logout#x' }).expect(400);
      expect(fieldError(fragment.text, 'backchannelLogoutURL')).to.equal(t('messages-apps:backchannelLogoutFragment'));

      const made = await browser.fill(fragment, '/apps', { ...base, [label('backchannelLogoutURL')]: 'https://rp.example.test/logout' }).expect(302);
      const page = await browser.get(made.headers.get('location')!).expect(200);
      if (lang !== 'en') expectIn(page, lang);
      expect(page.text).to.match(/data-testid="app-backchannel-logout"><code>https:\/\/rp\.example\.test\/logout<\/code>/);
      const clientId = /data-testid="client-id">([^<]+)</.exec(page.text)![1]!;
      expect((await server.db('oauth_apps').where({ client_id: clientId }).first()).backchannel_logout_uri).to.equal('https://rp.example.test/logout');
      // The provider's view of the client carries it, with the session required.
      const client = await server.idp.provider.Client.find(clientId) as unknown as { backchannelLogoutUri?: string; backchannelLogoutSessionRequired?: boolean };
      expect(client).to.include({ backchannelLogoutUri: 'https://rp.example.test/logout', backchannelLogoutSessionRequired: true });

      // The edit form shows it; an empty box removes it.
      const edit = await browser.get(`${developer}/apps/${clientId}`).expect(200);
      expect(edit.text).to.include('value="https://rp.example.test/logout"');
      await browser.fill(edit, `/apps/${clientId}`, { [label('backchannelLogoutURL')]: '' }).expect(302);
      const after = await browser.get(`${developer}/apps/${clientId}`).expect(200);
      expect(textOf(after)).to.include(t('apps:app.backchannelLogoutOff'));
      expect((await server.db('oauth_apps').where({ client_id: clientId }).first()).backchannel_logout_uri).to.equal(null);
    });
  }

  describe('in the API', () => {
    async function api(token: string, method: string, path: string, body?: unknown): Promise<ApiResponse> {
      return call(server, `/apis/v2${path}`, { token, method, ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }) });
    }

    it('is null by default, set at creation, kept when left out, changed, and removed with null or ""', async () => {
      const owner = await makeUser(server.db);
      const group = await makeGroup(server.db, owner.id);
      const token = await personalToken(server.db, owner.id, { scopes: ['groups:read-write'] });
      const plain = await api(token, 'POST', `/groups/${group.id}/oauth-apps`, VALID);
      expect(plain.status, plain.text).to.equal(201);
      expect(plain.body.data.backchannelLogoutURL).to.equal(null);

      const made = await api(token, 'POST', `/groups/${group.id}/oauth-apps`, { ...VALID, backchannelLogoutURL: 'http://127.0.0.1:8080/logout' });
      expect(made.status, made.text).to.equal(201);
      const id = made.body.data.clientID as string;
      expect(made.body.data.backchannelLogoutURL).to.equal('http://127.0.0.1:8080/logout');
      expect((await api(token, 'PATCH', `/oauth-apps/${id}`, { name: 'Renamed' })).body.data.backchannelLogoutURL).to.equal('http://127.0.0.1:8080/logout');
      expect((await api(token, 'PATCH', `/oauth-apps/${id}`, { backchannelLogoutURL: 'https://rp.example.test/bc' })).body.data.backchannelLogoutURL).to.equal('https://rp.example.test/bc');
      expect((await api(token, 'PATCH', `/oauth-apps/${id}`, { backchannelLogoutURL: null })).body.data.backchannelLogoutURL).to.equal(null);
      await api(token, 'PATCH', `/oauth-apps/${id}`, { backchannelLogoutURL: 'https://rp.example.test/bc' });
      expect((await api(token, 'PATCH', `/oauth-apps/${id}`, { backchannelLogoutURL: '' })).body.data.backchannelLogoutURL).to.equal(null);

      for (const [value, message] of [
        ['http://rp.example.test/bc', `backchannelLogoutURL ${HTTPS_RULE}`],
        ['not a url', 'backchannelLogoutURL must be an absolute URL'],
        ['https://rp.example.test/bc#frag', 'backchannelLogoutURL must not contain a fragment (#…)'],
        [42, 'backchannelLogoutURL must be a URL, an empty string or null'],
        [`https://rp.example.test/${'a'.repeat(2100)}`, 'backchannelLogoutURL must be at most 2048 characters'],
      ] as const) {
        const res = await api(token, 'PATCH', `/oauth-apps/${id}`, { backchannelLogoutURL: value });
        expectApiError(res, 400, 'invalid_request');
        expect(res.body.error_description, String(value)).to.include(message);
      }
      expect((await api(token, 'GET', `/oauth-apps/${id}`)).body.data.backchannelLogoutURL).to.equal(null);
    });
  });
});

describeEachProfile('idp app create/update --backchannel-logout-url', (profile) => {
  const t = useDatabase(profile);

  it('sets, changes and removes it, and refuses a bad one naming the flag', async () => {
    const owner = await makeUser(t.db);
    const group = await makeGroup(t.db, owner.id);
    const base = ['app', 'create', '--group', group.path, '--name', 'RP', '--homepage-url', 'https://rp.example.test', '--callback-url', 'https://rp.example.test/cb'];
    const app = json(await cli(t.url, [...base, '--backchannel-logout-url', 'https://rp.example.test/bc', '--json']));
    expect(app.backchannelLogoutURL).to.equal('https://rp.example.test/bc');
    const id = String(app.clientID);
    expect(json(await cli(t.url, ['app', 'update', id, '--backchannel-logout-url', 'https://rp.example.test/other', '--json'])).backchannelLogoutURL).to.equal('https://rp.example.test/other');
    expect(json(await cli(t.url, ['app', 'update', id, '--device-flow', '--json'])).backchannelLogoutURL).to.equal('https://rp.example.test/other');
    expect(json(await cli(t.url, ['app', 'update', id, '--backchannel-logout-url', '', '--json'])).backchannelLogoutURL).to.equal(null);
    expect(refusal(await cli(t.url, ['app', 'update', id, '--backchannel-logout-url', 'http://rp.example.test/bc'])))
      .to.equal(`idp: --backchannel-logout-url: backchannelLogoutURL ${HTTPS_RULE}`);
  });
});
