import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { addMember } from '../../src/services/groups.js';
import { describeEachProfile, listen, useIdp } from '../helpers/app.js';
import { groupAccess, makeGroup, makeUser } from '../helpers/factories.js';
import { launchChromium, signInThroughPage } from './support.js';

/** A tiny third-party server: its /callback answers a short page and records (in `received`) the first request there. */
async function startCallbackServer(): Promise<{ url: string; received: Promise<URL>; close(): Promise<void> }> {
  let arrived!: (url: URL) => void;
  const received = new Promise<URL>((resolve) => (arrived = resolve));
  const server = await listen((req, res) => {
    const url = new URL(req.url ?? '/', `http://${req.headers.host}`);
    if (url.pathname === '/callback') arrived(url);
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end('<!doctype html><title>Callback</title><p>Signed in.</p>');
  });
  return { url: `${server.url}/callback`, received, close: server.close };
}

type CallbackServer = Awaited<ReturnType<typeof startCallbackServer>>;

describeEachProfile('OAuth applications in a real browser', function (profile) {
  this.timeout(60_000);
  const idp = useIdp(profile);
  let chromium: Browser;
  let context: BrowserContext;
  let page: Page;
  let callback: CallbackServer;

  before(async () => {
    chromium = await launchChromium();
  });
  beforeEach(async () => {
    context = await chromium.newContext();
    page = await context.newPage();
    callback = await startCallbackServer();
  });
  afterEach(async () => {
    await context?.close();
    await callback?.close();
  });
  after(() => chromium?.close());

  it('lets an owner follow the click path, read the client ID and secret, and complete an authorization-code flow with them', async () => {
    const owner = await makeUser(idp.db);
    const group = await makeGroup(idp.db, owner.id, { name: 'Analytical Engines' });

    // Group → Settings → Developer → New application, by their visible labels.
    await signInThroughPage(page, idp.url, owner);
    await page.getByRole('link', { name: 'Analytical Engines' }).click();
    await page.getByRole('link', { name: 'Settings', exact: true }).click();
    await page.getByRole('link', { name: 'Developer', exact: true }).click();
    await page.getByRole('link', { name: 'New application' }).click();
    await page.getByLabel('Application name').fill('Difference Engine');
    await page.getByLabel('Homepage URL').fill('https://engine.example.test');
    await page.getByLabel('Description').fill('Tabulates polynomials');
    await page.getByLabel('Authorization callback URL').fill(callback.url);
    await page.getByRole('button', { name: 'Create', exact: true }).click();

    // The edit view: the client ID, and this once the secret with its warning and a Copy button.
    await page.getByTestId('client-secret').waitFor();
    const clientId = (await page.getByTestId('client-id').textContent())!.trim();
    const clientSecret = (await page.getByTestId('client-secret').textContent())!.trim();
    expect(clientId).to.match(/^[0-9a-f]{20}$/);
    expect(clientSecret).to.match(/^hs_[0-9A-Za-z]{36}$/);
    expect(await page.getByText('It will not be shown again').isVisible()).to.equal(true);
    expect(await page.getByTestId('new-secret-box').getByRole('button', { name: 'Copy' }).isVisible()).to.equal(true);
    expect(await page.getByRole('heading', { name: 'Difference Engine' }).isVisible()).to.equal(true);

    // A later visit shows the client ID but never the secret.
    await page.goto(`${idp.url}/groups/${group.path}/settings/developer`);
    await page.getByRole('link', { name: 'Difference Engine' }).click();
    expect((await page.getByTestId('client-id').textContent())!.trim()).to.equal(clientId);
    expect(await page.getByTestId('client-secret').count()).to.equal(0);
    expect(await page.content()).not.to.include(clientSecret);

    // The third-party server sends the same browser to authorize; the owner is signed in, so consent comes next.
    const state = 'state-from-the-browser-test';
    const authorize = new URL('/login/oauth/authorize', idp.url);
    authorize.search = new URLSearchParams({ client_id: clientId, redirect_uri: callback.url, state, scope: 'groups:read-only' }).toString();
    await page.goto(authorize.toString());
    expect(await page.getByTestId('app-name').textContent()).to.equal('Difference Engine');
    await page.getByRole('button', { name: 'Authorize' }).click();
    const returned = await callback.received;
    expect(returned.searchParams.get('state')).to.equal(state);
    expect(returned.searchParams.get('iss')).to.equal(idp.url);
    const code = returned.searchParams.get('code')!;
    expect(code).to.be.a('string').and.not.equal('');

    // The server exchanges the code with the secret it read from the page, and calls the API.
    const tokenResponse = await fetch(`${idp.url}/login/oauth/access_token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams({ grant_type: 'authorization_code', client_id: clientId, client_secret: clientSecret, code, redirect_uri: callback.url }).toString(),
    });
    const tokens = (await tokenResponse.json()) as Record<string, string>;
    expect(tokenResponse.status, JSON.stringify(tokens)).to.equal(200);
    expect(tokens.access_token).to.match(/^ho_/);
    expect(tokens.scope).to.equal('groups:read-only');

    const groups = await fetch(`${idp.url}/apis/v2/groups`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect(groups.status).to.equal(200);
    const body = (await groups.json()) as { data: { items: Array<{ id: number; role: string }> } };
    expect(body.data.items.map((g) => [g.id, g.role])).to.deep.include([group.id, 'owner']);
  });

  it('gives a member of the group no way in: no Settings link, and a 403 page at the Developer address', async () => {
    const owner = await makeUser(idp.db);
    const member = await makeUser(idp.db);
    const group = await makeGroup(idp.db, owner.id, { name: 'Shared Group' });
    await addMember(idp.db, await groupAccess(idp.db, owner.id, group.id), { user: member.username, role: 'member' });

    await signInThroughPage(page, idp.url, member);
    await page.getByRole('link', { name: 'Shared Group' }).click();
    await page.getByTestId('group-name').waitFor();
    expect(await page.getByRole('link', { name: 'Settings', exact: true }).count()).to.equal(0);
    expect(await page.getByRole('link', { name: 'Developer' }).count()).to.equal(0);

    for (const path of ['settings/developer', 'settings/developer/apps/new']) {
      const response = await page.goto(`${idp.url}/groups/${group.path}/${path}`);
      expect(response!.status(), path).to.equal(403);
      expect(await page.getByRole('heading', { name: 'Not allowed' }).isVisible()).to.equal(true);
      expect(await page.getByRole('link', { name: 'New application' }).count()).to.equal(0);
      expect(await page.getByLabel('Application name').count()).to.equal(0);
    }
  });
});
