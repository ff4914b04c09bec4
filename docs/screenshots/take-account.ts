/**
 * Takes the docs' screenshots of Account settings → Sessions and Delete account, at a desktop
 * width (1200 px) and a phone's (390 px), from a real server on a throwaway SQLite database, in
 * the system's Chromium. Run from the repository root:
 *
 *   npx tsx docs/screenshots/take-account.ts
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser } from 'playwright-core';
import { signInThroughPage } from '../../test/e2e/support.js';
import { makeGroup, makeUser } from '../../test/helpers/factories.js';
import { takeScreenshots } from './session.js';

const OUT = fileURLToPath(new URL('.', import.meta.url));
const WIDTHS = { desktop: { width: 1200, height: 760 }, phone: { width: 390, height: 844 } };
const FIREFOX_ON_WINDOWS = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:128.0) Gecko/20100101 Firefox/128.0';
const SAFARI_ON_IPHONE = 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1';

/** Signs `user` in from a browser that names itself `userAgent`, and leaves it signed in. */
async function signInElsewhere(chromium: Browser, base: string, user: { username: string; password: string }, userAgent: string) {
  const context = await chromium.newContext({ userAgent });
  await signInThroughPage(await context.newPage(), base, user);
  await context.close();
}

takeScreenshots(async (idp, chromium) => {
  const ada = await makeUser(idp.idp.db, { username: 'ada', email: 'ada@example.test', name: 'Ada Lovelace' });
  await makeGroup(idp.idp.db, ada.id, { name: 'Analytical Engines', path: 'engines' });
  await signInElsewhere(chromium, idp.url, ada, FIREFOX_ON_WINDOWS);
  await signInElsewhere(chromium, idp.url, ada, SAFARI_ON_IPHONE);

  for (const [name, viewport] of Object.entries(WIDTHS)) {
    const context = await chromium.newContext({ viewport, deviceScaleFactor: 1 });
    const page = await context.newPage();
    await signInThroughPage(page, idp.url, ada);
    await page.goto(`${idp.url}/account/settings/sessions`);
    await page.screenshot({ path: join(OUT, `sessions-${name}.png`), fullPage: true });
    await page.goto(`${idp.url}/account/settings/delete`);
    await page.getByLabel('Your password').fill(ada.password);
    await page.getByRole('button', { name: 'Delete my account' }).click();
    await page.getByTestId('last-owner').waitFor();
    await page.screenshot({ path: join(OUT, `delete-account-${name}.png`), fullPage: true });
    await page.getByRole('button', { name: 'Sign out' }).click();
    await context.close();
  }
  console.log(`wrote sessions-{desktop,phone}.png and delete-account-{desktop,phone}.png to ${OUT}`);
});
