/**
 * Takes the README's screenshots of the mail-backed account pages (Forgot password, the reset
 * page a mailed link opens, and the banner asking to verify the e-mail address), each at 1200 px
 * and as a 390 px phone, from a real server on a throwaway SQLite database, in the system's
 * Chromium. Run from the repository root:
 *
 *   npx tsx docs/screenshots/take-account-mail.ts
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { issueLink } from '../../src/services/account-links.js';
import { signInThroughPage } from '../../test/e2e/support.js';
import { makeGroup, makeUser } from '../../test/helpers/factories.js';
import { takeScreenshots } from './session.js';

const OUT = fileURLToPath(new URL('.', import.meta.url));
const SIZES = [
  { suffix: '', viewport: { width: 1200, height: 640 } },
  { suffix: '-phone', viewport: { width: 390, height: 700 } },
];

async function eachSize(chromium: Browser, shoot: (page: Page, file: (name: string) => string) => Promise<void>): Promise<void> {
  for (const { suffix, viewport } of SIZES) {
    const context = await chromium.newContext({ viewport, deviceScaleFactor: 1 });
    try {
      await shoot(await context.newPage(), (name) => join(OUT, `${name}${suffix}.png`));
    } finally {
      await context.close();
    }
  }
}

takeScreenshots(async (idp, chromium) => {
  const db = idp.idp.db;
  const ada = await makeUser(db, { username: 'ada', email: 'ada@example.test', name: 'Ada Lovelace' });
  await makeGroup(db, ada.id, { name: 'Analytical Engines', path: 'engines' });

  await eachSize(chromium, async (page, file) => {
    await page.goto(`${idp.url}/forgot-password`);
    await page.getByLabel('Email').fill('ada@example.test');
    await page.screenshot({ path: file('forgot-password') });

    await page.goto(await issueLink(db, idp.url, 'reset-password', ada));
    await page.getByLabel('New password', { exact: true }).fill('short');
    await page.getByLabel('New password again').fill('short');
    await page.getByRole('button', { name: 'Set the new password' }).click();
    await page.getByRole('alert').waitFor();
    await page.screenshot({ path: file('reset-password'), fullPage: true });

    await signInThroughPage(page, idp.url, ada);
    await page.getByTestId('verify-banner').waitFor();
    await page.screenshot({ path: file('verify-banner') });
  });
  console.log(`wrote forgot-password, reset-password and verify-banner (desktop and -phone) to ${OUT}`);
});
