import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { makeGroup, makeUser } from '../helpers/factories.js';
import { signInThroughPage, useChromium } from './support.js';

const DESKTOP = { width: 1200, height: 800 };
const PHONE = { width: 390, height: 844 };
const ACCOUNT_PAGES = [
  ['Profile', '/account/settings/profile'],
  ['Password', '/account/settings/password'],
  ['Sessions', '/account/settings/sessions'],
  ['Two-factor authentication', '/account/settings/two-factor'],
  ['Passkeys', '/account/settings/passkeys'],
  ['Sign-in methods', '/account/settings/sign-in-methods'],
  ['Access tokens', '/account/settings/tokens'],
  ['Authorized applications', '/account/settings/applications'],
  ['Delete account', '/account/settings/delete'],
];
const GROUP_PAGES = (path: string) => [
  ['General', `/groups/${path}/settings`],
  ['Members', `/groups/${path}/settings/members`],
  ['Developer', `/groups/${path}/settings/developer`],
  ['Webhooks', `/groups/${path}/settings/webhooks`],
  ['Resources', `/groups/${path}/settings/resources`],
  ['Audit log', `/groups/${path}/settings/audit`],
];

/** Account settings and a group's Settings: their pages in a sidebar left of the page, a menu above it on phones. */
describeEachProfile('Settings areas in a real browser: sidebar navigation', function (profile) {
  this.timeout(60_000);
  const idp = useIdp(profile);
  const chromium = useChromium();

  /** The visible links of the navigation named `label`: [text, path] each. */
  const visibleLinks = (page: Page, label: string) =>
    page.getByRole('navigation', { name: label }).getByRole('link').evaluateAll((links) =>
      links.filter((a) => (a as HTMLElement).offsetParent !== null).map((a) => [a.textContent!.trim(), new URL((a as HTMLAnchorElement).href).pathname]));
  const box = async (page: Page, selector: string) => (await page.locator(selector).first().boundingBox())!;

  /** A group's owner signed in at `viewport`, and the pages of `area` as [name, path]. */
  const signedInOwner = async (area: 'Account settings' | 'Group settings', viewport: { width: number; height: number }) => {
    const owner = await makeUser(idp.db);
    const group = await makeGroup(idp.db, owner.id);
    const pages = area === 'Account settings' ? ACCOUNT_PAGES : GROUP_PAGES(group.path);
    const page = await chromium.newPage({ viewport });
    await signInThroughPage(page, idp.url, owner);
    return { pages, page };
  };

  for (const area of ['Account settings', 'Group settings'] as const) {
    it(`${area}: at 1200 px every page of the area is listed left of the page, the current one marked`, async () => {
      const { pages, page } = await signedInOwner(area, DESKTOP);
      for (const [name, path] of pages) {
        await page.goto(`${idp.url}${path}`);
        const nav = page.getByRole('navigation', { name: area });
        expect(await visibleLinks(page, area), path).to.deep.equal(pages);
        expect(await nav.locator('[aria-current="page"]:visible').allTextContents(), path).to.deep.equal([name]);
        const [sidebar, content] = [await box(page, '.settings-side'), await box(page, '.settings-content')];
        expect(sidebar.x + sidebar.width, `${path}: the sidebar ends before the page begins`).to.be.at.most(content.x);
        expect(content.width, `${path}: the page's column`).to.be.at.least(800);
        for (const card of await page.locator('.card').all()) {
          expect((await card.boundingBox())!.x, `${path}: every card of the page is in its column`).to.equal(content.x);
        }
      }
    });

    it(`${area}: at 390 px no page is wider than the phone and the pages are a menu above the page`, async () => {
      const { pages, page } = await signedInOwner(area, PHONE);
      for (const [name, path] of pages) {
        await page.goto(`${idp.url}${path}`);
        expect(await page.evaluate(() => document.documentElement.scrollWidth), path).to.be.at.most(PHONE.width);
        const menu = page.getByRole('navigation', { name: area }).locator('details');
        expect(await menu.locator('summary').textContent(), path).to.equal(name);
        expect(await visibleLinks(page, area), `${path}: the menu starts closed`).to.deep.equal([]);
        expect((await box(page, '.settings-side')).y, `${path}: the menu is above the page`).to.be.below((await box(page, '.settings-content')).y);
      }
      // The menu opens without script and leads to the other pages.
      await page.getByRole('navigation', { name: area }).locator('summary').click();
      expect(await visibleLinks(page, area)).to.deep.equal(pages);
      await page.getByRole('navigation', { name: area }).getByRole('link', { name: pages[1]![0] }).click();
      await page.waitForURL(`${idp.url}${pages[1]![1]}`);
    });
  }

  it('the header\'s Account settings link opens Profile', async () => {
    const user = await makeUser(idp.db);
    const page = await chromium.newPage({ viewport: DESKTOP });
    await signInThroughPage(page, idp.url, user);
    await page.getByRole('banner').getByRole('link', { name: 'Account settings' }).click();
    await page.waitForURL(`${idp.url}/account/settings/profile`);
    await page.getByRole('heading', { name: 'Profile' }).waitFor();
  });
});
