import { expect } from 'chai';
import { call } from '../helpers/api.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { signIn, type Browser } from '../helpers/browser.js';
import { makeApp, makeGroup, makeUser, personalToken, type TestUser } from '../helpers/factories.js';
import { formOf, unescapeHtml } from '../helpers/html.js';

/**
 * A group's applications that registered themselves (a Client ID Metadata Document, or Dynamic
 * Client Registration) next to those a person registered: marked as such in the list, on their
 * page and in the API, with nothing offered that does not apply to them, and Delete working.
 */
describeEachProfile('Applications registered automatically', (profile) => {
  const idp = useIdp(profile);
  let owner: TestUser;
  let group: { id: number; path: string };
  let browser: Browser;
  let token: string;
  let byDocument: string;
  let byDynamic: string;
  let byPerson: string;

  const DOCUMENT_URL = 'https://agent.example.test/client.json';

  before(async () => {
    owner = await makeUser(idp.db);
    group = await makeGroup(idp.db, owner.id);
    byPerson = (await makeApp(idp.db, owner.id, group.id, { name: 'Made by hand' })).clientId;
    const made = (await makeApp(idp.db, owner.id, group.id, { name: 'Agent by document', type: 'public' })).clientId;
    byDynamic = (await makeApp(idp.db, owner.id, group.id, { name: 'Agent by registration', type: 'public' })).clientId;
    // A metadata document's client ID is the document's URL.
    byDocument = DOCUMENT_URL;
    await idp.db('oauth_apps').where({ client_id: made }).update({
      client_id: DOCUMENT_URL,
      registered_by: 'metadata_document',
      registered_from: 'agent.example.test',
      redirect_uris: JSON.stringify(['http://127.0.0.1:7777/cb', 'https://agent.example.test/cb']),
    });
    await idp.db('oauth_apps').where({ client_id: byDynamic }).update({ registered_by: 'dynamic', registered_from: '203.0.113.7' });
    browser = await signIn(idp.url, owner);
    token = await personalToken(idp.db, owner.id, { scopes: ['groups:read-write'] });
  });

  const developer = () => `/groups/${group.path}/settings/developer`;
  const appPage = (clientId: string) => `${developer()}/apps/${encodeURIComponent(clientId)}`;

  /** The list's rows, each as its client ID and whether it shows the badge. */
  function rows(html: string): Record<string, boolean> {
    return Object.fromEntries([...html.matchAll(/<tr data-testid="app-row" data-client-id="([^"]+)">([\s\S]*?)<\/tr>/g)].map((m) => [unescapeHtml(m[1]!), m[2]!.includes('data-testid="registered-automatically"')]));
  }

  it('marks them in the group\'s list of applications, and only them', async () => {
    const list = await browser.get(developer()).expect(200);
    expect(rows(list.text)).to.deep.equal({ [byPerson]: false, [byDocument]: true, [byDynamic]: true });
    expect(list.text).to.contain('Registered automatically');
  });

  it('says on the page how and from where, and offers neither secrets nor the settings form', async () => {
    const page = await browser.get(appPage(byDocument)).expect(200);
    expect(unescapeHtml(/data-testid="registered-how">([^<]*)</.exec(page.text)![1]!)).to.equal('by a metadata document at agent.example.test');
    expect(page.text).not.to.contain('data-testid="edit-app-form"');
    expect(page.text).not.to.contain(`action="${appPage(byDocument)}/secrets"`);
    expect(page.text).not.to.contain('Generate a new client secret');
    expect([...page.text.matchAll(/<code>([^<]*)<\/code><br>/g)].map((m) => m[1])).to.deep.equal(['http://127.0.0.1:7777/cb', 'https://agent.example.test/cb']);
    // What still applies: revoking its users' tokens, and deleting it.
    expect(page.text).to.contain('data-testid="revoke-all-tokens"');
    expect(page.text).to.contain(`action="${appPage(byDocument)}/delete"`);

    const dynamic = await browser.get(appPage(byDynamic)).expect(200);
    expect(unescapeHtml(/data-testid="registered-how">([^<]*)</.exec(dynamic.text)![1]!)).to.equal('by dynamic registration from 203.0.113.7');

    const person = await browser.get(appPage(byPerson)).expect(200);
    expect(person.text).not.to.contain('data-testid="registered-automatically"');
    expect(person.text).to.contain('data-testid="edit-app-form"');
  });

  it('changes nothing when its settings or a secret are posted by hand', async () => {
    const page = await browser.get(appPage(byPerson)).expect(200);
    // The form a person's application offers, posted to the one that registered itself.
    const form = formOf(page.text, appPage(byPerson));
    const before = await idp.db('oauth_apps').where({ client_id: byDynamic }).first();
    await browser.submit(appPage(byDynamic), { ...form.fields, name: 'Renamed', callbackURL: 'https://evil.example.test/cb' }).expect(302, appPage(byDynamic));
    await browser.submit(`${appPage(byDynamic)}/secrets`).expect(302, appPage(byDynamic));
    const after = await idp.db('oauth_apps').where({ client_id: byDynamic }).first();
    expect(after).to.deep.equal(before);
    expect(await idp.db('oauth_app_secrets').where({ app_id: after.id }).count({ n: '*' }).first()).to.satisfy((row: { n: number | string }) => Number(row.n) === 0);
  });

  it('gives registeredAutomatically in the API: how and from where, or null', async () => {
    const one = async (clientId: string) => (await call(idp, `/apis/v2/oauth-apps/${encodeURIComponent(clientId)}`, { token })).body.data.registeredAutomatically;
    expect(await one(byDocument)).to.deep.equal({ by: 'metadata_document', from: 'agent.example.test' });
    expect(await one(byDynamic)).to.deep.equal({ by: 'dynamic', from: '203.0.113.7' });
    expect(await one(byPerson)).to.equal(null);
    const list = await call(idp, `/apis/v2/groups/${group.id}/oauth-apps`, { token });
    expect(list.status, list.text).to.equal(200);
    expect(Object.fromEntries(list.body.data.items.map((app: { clientID: string; registeredAutomatically: unknown }) => [app.clientID, app.registeredAutomatically]))).to.deep.equal({
      [byPerson]: null,
      [byDocument]: { by: 'metadata_document', from: 'agent.example.test' },
      [byDynamic]: { by: 'dynamic', from: '203.0.113.7' },
    });
  });

  it('refuses an edit through the API with 409, naming why, and changes nothing', async () => {
    const res = await call(idp, `/apis/v2/oauth-apps/${encodeURIComponent(byDynamic)}`, {
      token, method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Renamed', callbackURL: 'https://evil.example/cb' }),
    });
    expect(res.status, res.text).to.equal(409);
    expect(res.text).to.include('registered itself automatically');
    const row = await idp.db('oauth_apps').where({ client_id: byDynamic }).first();
    expect(row.name).not.to.equal('Renamed');
    expect(row.callback_url).not.to.equal('https://evil.example/cb');
  });

  it('lets an owner delete one through its page', async () => {
    const doomed = (await makeApp(idp.db, owner.id, group.id, { name: 'Doomed agent', type: 'public' })).clientId;
    await idp.db('oauth_apps').where({ client_id: doomed }).update({ registered_by: 'dynamic', registered_from: '198.51.100.1' });
    const ask = await browser.get(`${appPage(doomed)}/delete`).expect(200);
    const form = formOf(ask.text, `${appPage(doomed)}/delete`);
    await browser.postForm(new URL(form.action, ask.url), form.fields).expect(302, `${developer()}?notice=deleted`);
    expect(await idp.db('oauth_apps').where({ client_id: doomed }).first()).to.equal(undefined);
  });
});
