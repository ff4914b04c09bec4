import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { makeGroup, makeUser } from '../helpers/factories.js';
import { launchChromium, signInThroughPage } from './support.js';

const PHONE = { width: 390, height: 844 };

describeEachProfile('Resources in a real browser', function (profile) {
  this.timeout(60_000);
  const idp = useIdp(profile);
  let chromium: Browser;
  let context: BrowserContext;
  let page: Page;

  before(async () => {
    chromium = await launchChromium();
  });
  afterEach(() => context?.close());
  after(() => chromium?.close());

  async function open(viewport: { width: number; height: number }) {
    context = await chromium.newContext({ viewport, deviceScaleFactor: 1 });
    page = await context.newPage();
    // "Generate a new secret" asks first; the person says yes.
    page.on('dialog', (dialog) => void dialog.accept());
    return page;
  }
  const documentWidth = () => page.evaluate(() => document.documentElement.scrollWidth);

  /** Registers a resource through Register resource by its labels and buttons; ends on the resource's page. */
  async function registerThroughPage(group: { path: string }, identifier: string) {
    await page.goto(`${idp.url}/groups/${group.path}/settings/resources`);
    await page.getByRole('link', { name: 'Register resource' }).click();
    await page.getByLabel('Identifier').fill(identifier);
    await page.getByLabel('Name', { exact: true }).fill('Tools API');
    await page.getByLabel('JWT (RFC 9068)').check();
    await page.getByLabel('Scope 1', { exact: true }).fill('tools:read');
    await page.getByLabel('Description of scope 1').fill('Read your tools');
    await page.getByLabel('Scope 2', { exact: true }).fill('tools:write');
    await page.getByLabel('Description of scope 2').fill('Change your tools');
    await Promise.all([page.waitForURL(/\/resources\/\d+\?notice=created$/), page.getByRole('button', { name: 'Register resource' }).click()]);
  }

  it('registers a resource, shows its secret once, edits it, replaces the secret and deletes it', async () => {
    const owner = await makeUser(idp.db);
    const group = await makeGroup(idp.db, owner.id);
    await open({ width: 1200, height: 800 });
    await signInThroughPage(page, idp.url, owner);

    // A refused form keeps what was typed.
    await page.goto(`${idp.url}/groups/${group.path}/settings/resources/new`);
    await page.getByLabel('Identifier').fill('https://tools.example.test/mcp?x=1');
    await page.getByLabel('Name', { exact: true }).fill('Kept');
    await page.getByLabel('Scope 1', { exact: true }).fill('kept:scope');
    await Promise.all([page.waitForLoadState('load'), page.getByRole('button', { name: 'Register resource' }).click()]);
    expect(await page.locator('#identifier-error').textContent()).to.equal('Identifier must not contain a query (?…)');
    expect(await page.locator('#scope-0-error').textContent()).to.equal('Scope description is required');
    expect(await page.getByLabel('Name', { exact: true }).inputValue()).to.equal('Kept');
    expect(await page.getByLabel('Scope 1', { exact: true }).inputValue()).to.equal('kept:scope');

    const identifier = `https://tools-${profile.replace(/\W/g, '-')}.example.test/mcp`;
    await registerThroughPage(group, identifier);
    const secret = (await page.getByTestId('introspection-secret').textContent())!;
    expect(secret).to.match(/^hs_/);
    expect(await page.getByTestId('resource-format').textContent()).to.equal('JWT (RFC 9068)');
    expect(JSON.parse((await page.getByTestId('metadata-json').textContent())!)).to.deep.include({ resource: identifier, scopes_supported: ['tools:read', 'tools:write'] });

    // A reload does not show the secret again.
    await page.reload();
    expect(await page.getByTestId('introspection-secret').count()).to.equal(0);
    expect(await page.content()).not.to.include(secret);
    expect(await page.getByTestId('secret-last-four').textContent()).to.equal(`hs_••••••••${secret.slice(-4)}`);

    // Edit: rename, back to opaque, drop the second scope.
    await page.getByLabel('Name', { exact: true }).fill('Tools API v2');
    await page.getByLabel('Opaque (ho_…)').check();
    await page.getByLabel('Scope 2', { exact: true }).fill('');
    await page.getByLabel('Description of scope 2').fill('');
    await Promise.all([page.waitForURL(/\?notice=saved$/), page.getByRole('button', { name: 'Save resource' }).click()]);
    expect(await page.getByTestId('resource-name').textContent()).to.equal('Tools API v2');
    expect(await page.getByTestId('resource-format').textContent()).to.equal('Opaque (ho_…)');
    expect(await page.getByTestId('resource-scopes').textContent()).to.match(/^\s*tools:read\s*$/);

    // A new secret, after the confirmation, shown once.
    await Promise.all([page.waitForURL(/\?notice=secret$/), page.getByRole('button', { name: 'Generate a new secret' }).click()]);
    const fresh = (await page.getByTestId('introspection-secret').textContent())!;
    expect(fresh).to.match(/^hs_/).and.not.equal(secret);
    await page.reload();
    expect(await page.getByTestId('introspection-secret').count()).to.equal(0);

    // Delete asks first.
    await page.getByRole('button', { name: 'Delete resource' }).click();
    await page.waitForURL(/\/delete\??$/);
    await Promise.all([page.waitForURL(/\?notice=deleted$/), page.getByRole('button', { name: 'Delete resource' }).click()]);
    expect(await page.getByTestId('no-resources').isVisible()).to.equal(true);
  });

  it('at 390 px the list, Register resource and a resource\'s page are no wider than the phone', async () => {
    const owner = await makeUser(idp.db);
    const group = await makeGroup(idp.db, owner.id);
    await open(PHONE);
    await signInThroughPage(page, idp.url, owner);
    await page.goto(`${idp.url}/groups/${group.path}/settings/resources/new`);
    expect(await documentWidth(), 'Register resource is no wider than the phone').to.be.at.most(PHONE.width);
    await registerThroughPage(group, `https://a-rather-long-host-name-${profile.replace(/\W/g, '-')}.example.test/${'a-very-long-unbroken-path-'.repeat(4)}`);
    expect(await documentWidth(), 'the resource\'s page is no wider than the phone').to.be.at.most(PHONE.width);
    await page.goto(`${idp.url}/groups/${group.path}/settings/resources`);
    expect(await documentWidth(), 'the Resources page is no wider than the phone').to.be.at.most(PHONE.width);
  });
});
