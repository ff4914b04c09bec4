import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { addMember } from '../../src/services/groups.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { groupAccess, makeApp, makeGroup, makeUser, personalToken } from '../helpers/factories.js';
import { launchChromium, signInThroughPage } from './support.js';

/** Where these tests leave their screenshots to look at (the docs' are taken by docs/screenshots/take-groups.ts). */
const SHOTS = fileURLToPath(new URL('../../tmp/screenshots/', import.meta.url));
const PHONE = { width: 390, height: 844 };
/** A name of the longest length allowed, without a space to break at. */
const LONG_NAME = `Supercalifragilistic${'x'.repeat(80)}`;

describeEachProfile('Layout in a real browser: phones, long values, dark mode, the API reference', function (profile) {
  this.timeout(60_000);
  const idp = useIdp(profile);
  let chromium: Browser;
  let context: BrowserContext;
  let page: Page;

  before(async () => {
    chromium = await launchChromium();
    mkdirSync(SHOTS, { recursive: true });
  });
  afterEach(() => context?.close());
  after(() => chromium?.close());

  async function open(options: Parameters<Browser['newContext']>[0] = {}) {
    context = await chromium.newContext({ deviceScaleFactor: 1, ...options });
    page = await context.newPage();
    return page;
  }
  const documentWidth = () => page.evaluate(() => document.documentElement.scrollWidth);

  it('at 390 px a table shows its column labels and a long name stays within the viewport', async () => {
    const owner = await makeUser(idp.db, { name: LONG_NAME });
    const group = await makeGroup(idp.db, owner.id, { name: LONG_NAME });
    await idp.db('groups').where({ id: group.id }).update({ description: `https://example.test/${'d'.repeat(370)}` });
    const member = await makeUser(idp.db);
    await addMember(idp.db, await groupAccess(idp.db, owner.id, group.id), { user: member.username, role: 'member' });
    await makeApp(idp.db, owner.id, group.id, { name: LONG_NAME });

    await open({ viewport: PHONE });
    await signInThroughPage(page, idp.url, owner);
    await page.goto(`${idp.url}/groups/${group.path}`);
    expect(await documentWidth(), 'the group page is no wider than the phone').to.be.at.most(PHONE.width);
    await page.screenshot({ path: join(SHOTS, `group-long-name-phone-${profile}.png`), fullPage: true });

    await page.goto(`${idp.url}/groups/${group.path}/settings/members`);
    expect(await documentWidth(), 'the members page is no wider than the phone').to.be.at.most(PHONE.width);
    const labels = await page.getByTestId('member-row').first().locator('td[data-label]').evaluateAll((cells) =>
      cells.map((cell) => {
        const before = getComputedStyle(cell, '::before');
        return before.display === 'none' ? '' : before.content;
      }));
    expect(labels).to.deep.equal(['"Username"', '"Name"', '"Role"', 'none']);
    expect(await page.locator('thead').first().isVisible(), 'the header row gives way to the labels').to.equal(false);
    await page.screenshot({ path: join(SHOTS, `members-phone-${profile}.png`), fullPage: true });

    await page.goto(`${idp.url}/groups/${group.path}/settings/developer`);
    expect(await documentWidth(), 'the Developer page is no wider than the phone').to.be.at.most(PHONE.width);
    await page.getByTestId('app-link').first().click();
    expect(await documentWidth(), 'the application page is no wider than the phone').to.be.at.most(PHONE.width);
    await page.screenshot({ path: join(SHOTS, `application-phone-${profile}.png`), fullPage: true });
  });

  it('at 390 px a path of the longest length and a long callback URL wrap instead of widening the page', async () => {
    const owner = await makeUser(idp.db);
    const group = await makeGroup(idp.db, owner.id, { path: `p${'a'.repeat(63)}` });
    const { clientId } = await makeApp(idp.db, owner.id, group.id, { callbackURL: `https://app.example.test/${'c'.repeat(200)}` });

    await open({ viewport: PHONE });
    await signInThroughPage(page, idp.url, owner);
    for (const path of ['', '/settings', '/settings/delete', `/settings/developer/apps/${clientId}`]) {
      await page.goto(`${idp.url}/groups/${group.path}${path}`);
      expect(await documentWidth(), `/groups/<path>${path} is no wider than the phone`).to.be.at.most(PHONE.width);
    }
  });

  it('at 1200 px the table keeps its header row and the labels stay hidden', async () => {
    const owner = await makeUser(idp.db);
    const group = await makeGroup(idp.db, owner.id);
    await open({ viewport: { width: 1200, height: 800 } });
    await signInThroughPage(page, idp.url, owner);
    await page.goto(`${idp.url}/groups/${group.path}/settings/members`);
    expect(await page.locator('thead').first().isVisible()).to.equal(true);
    const before = await page.locator('td[data-label="Role"]').first().evaluate((cell) => getComputedStyle(cell, '::before').content);
    expect(before).to.be.oneOf(['none', 'normal']);
  });

  it('at 1200 px the Access tokens and Sessions tables keep each button, badge and scope on one line; at 390 px the page does not scroll sideways', async () => {
    const owner = await makeUser(idp.db);
    await personalToken(idp.db, owner.id, { name: LONG_NAME, scopes: ['groups:read-only', 'groups:read-write'] });
    await personalToken(idp.db, owner.id, { name: 'Expired', scopes: ['groups:read-only'] });
    await idp.db('personal_access_tokens').where({ name: 'Expired' }).update({ expires_at: new Date(Date.now() - 86_400_000).toISOString() });
    // Another browser signed in, so that the Sessions table has a Sign out button.
    const elsewhere = await chromium.newContext();
    try {
      await signInThroughPage(await elsewhere.newPage(), idp.url, owner);
    } finally {
      await elsewhere.close();
    }
    /** The buttons, badges and scopes of the page's tables whose text takes more than one line. */
    const broken = () => page.locator('table :is(button, .button, .badge, .scope)').evaluateAll((elements) =>
      elements.filter((element) => {
        const range = document.createRange();
        range.selectNodeContents(element);
        return new Set(Array.from(range.getClientRects(), (rect) => Math.round(rect.top))).size > 1;
      }).map((element) => element.textContent));

    await open({ viewport: { width: 1200, height: 800 } });
    await signInThroughPage(page, idp.url, owner);
    for (const path of ['/account/settings/tokens', '/account/settings/sessions']) {
      await page.goto(`${idp.url}${path}`);
      expect(await page.locator('table :is(button, .badge, .scope)').count(), path).to.be.at.least(2);
      expect(await broken(), `${path}: the buttons, badges and scopes broken across lines`).to.deep.equal([]);
      await page.screenshot({ path: join(SHOTS, `${path.split('/').pop()}-1200-${profile}.png`), fullPage: true });
    }
    await page.setViewportSize(PHONE);
    for (const path of ['/account/settings/tokens', '/account/settings/sessions']) {
      await page.goto(`${idp.url}${path}`);
      expect(await documentWidth(), `${path} is no wider than the phone`).to.be.at.most(PHONE.width);
      expect(await broken(), `${path} on a phone: the buttons, badges and scopes broken across lines`).to.deep.equal([]);
    }
  });

  it('follows the system\'s dark colour scheme', async () => {
    const owner = await makeUser(idp.db);
    await open({ viewport: PHONE, colorScheme: 'dark' });
    await signInThroughPage(page, idp.url, owner);
    const background = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    const card = await page.locator('.card').first().evaluate((el) => getComputedStyle(el).backgroundColor);
    const dark = (rgb: string) => rgb.match(/\d+/g)!.slice(0, 3).map(Number).every((c) => c < 60);
    expect(dark(background), background).to.equal(true);
    expect(dark(card), card).to.equal(true);
  });

  it('in dark mode the API reference\'s schema names read against their background (contrast of at least 4.5)', async () => {
    await open({ viewport: { width: 1200, height: 900 }, colorScheme: 'dark' });
    await page.goto(`${idp.url}/apis/v2/docs`);
    const names = page.locator('.models .json-schema-2020-12__title');
    await names.first().waitFor();
    // The text's colour and the colours of the element and its ancestors behind it, nearest first.
    const colours = await names.evaluateAll((elements) => elements.map((element) => {
      const behind: string[] = [];
      for (let e: Element | null = element; e; e = e.parentElement) behind.push(getComputedStyle(e).backgroundColor);
      return { name: element.textContent, color: getComputedStyle(element).color, behind };
    }));
    const rgba = (colour: string): number[] => colour.match(/[\d.]+/g)!.map(Number);
    const channel = (c: number) => (c / 255 <= 0.03928 ? c / 255 / 12.92 : ((c / 255 + 0.055) / 1.055) ** 2.4);
    const luminance = ([r = 0, g = 0, b = 0]: number[]) => 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b);
    const contrasts = colours.map(({ name, color, behind }) => {
      const background = behind.map(rgba).find((c) => c.length < 4 || (c[3] ?? 0) > 0) ?? [255, 255, 255];
      const [a, b] = [luminance(rgba(color)), luminance(background)];
      return { name, color, contrast: Math.round(((Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)) * 10) / 10 };
    });
    expect(contrasts.length).to.be.at.least(1);
    expect(contrasts.filter((c) => c.contrast < 4.5)).to.deep.equal([]);
  });

  it('suggests the new group\'s path from its name until the person edits it', async () => {
    const owner = await makeUser(idp.db);
    await open();
    await signInThroughPage(page, idp.url, owner);
    await page.goto(`${idp.url}/groups/new`);
    await page.getByLabel('Name').pressSequentially('Ada\'s Analytical Engines!');
    expect(await page.getByLabel('Path').inputValue()).to.equal('ada-s-analytical-engines');
    await page.getByLabel('Path').fill('engines');
    await page.getByLabel('Name').pressSequentially(' 2');
    expect(await page.getByLabel('Path').inputValue()).to.equal('engines');
    await page.getByRole('button', { name: 'Create group' }).click();
    await page.waitForURL(`${idp.url}/groups/engines?notice=created`);
  });

  it('renders the API reference at /apis/v2/docs without a CSP violation', async () => {
    await open({ viewport: { width: 1200, height: 900 } });
    const violations: string[] = [];
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) violations.push(message.text());
    });
    await page.addInitScript(() => {
      document.addEventListener('securitypolicyviolation', (event) => {
        console.error(`Content Security Policy violation: ${event.violatedDirective} ${event.blockedURI}`);
      });
    });
    const offOrigin: string[] = [];
    page.on('request', (request) => {
      if (!request.url().startsWith(idp.url) && !request.url().startsWith('data:')) offOrigin.push(request.url());
    });
    const res = await page.goto(`${idp.url}/apis/v2/docs`);
    expect(res?.status()).to.equal(200);
    await page.getByText('Delete a group (owners only)').first().waitFor();
    await page.getByText('Revoke all user tokens of an OAuth application (owners only)').first().waitFor();
    expect(await page.locator('.opblock-summary-path').first().textContent()).to.match(/^\/groups/);
    await page.screenshot({ path: join(SHOTS, `api-docs-${profile}.png`) });
    expect(violations).to.deep.equal([]);
    expect(offOrigin, 'every request stays on this origin').to.deep.equal([]);
  });
});
