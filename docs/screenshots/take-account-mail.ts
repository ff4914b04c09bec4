/**
 * Takes the docs' screenshots of the mail-backed account pages (Forgot password, the reset
 * page a mailed link opens, the banner asking to verify the e-mail address, the page after a
 * reset that lists what else reaches the account, and Profile with a new address waiting for its
 * link), each at 1200 px and as a 390 px phone, from a real server on a throwaway SQLite
 * database, in the system's Chromium. Run from the repository root:
 *
 *   npx tsx docs/screenshots/take-account-mail.ts
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { issueLink } from '../../src/services/account-links.js';
import { signInThroughPage } from '../../test/e2e/support.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { makeClient, makeGroup, makeUser, personalToken } from '../../test/helpers/factories.js';
import { oauthTokens } from '../../test/helpers/oauth.js';
import { takeScreenshots } from './session.js';

const OUT = fileURLToPath(new URL('.', import.meta.url));
/** The messages the pages send go here (no SMTP server), and are thrown away at exit. */
const MAIL_DIR = mkdtempSync(join(tmpdir(), 'idp-screenshot-mail-'));
process.on('exit', () => rmSync(MAIL_DIR, { recursive: true, force: true }));
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
  // Never verified (made with --unverified), so that the banner shows.
  const ada = await makeUser(db, { username: 'ada', email: 'ada@example.test', name: 'Ada Lovelace', verified: false });
  await makeGroup(db, ada.id, { name: 'Analytical Engines', path: 'engines' });
  const charles = await makeUser(db, { username: 'charles', email: 'charles@example.test', name: 'Charles Babbage' });
  const grace = await makeUser(db, { username: 'grace', email: 'grace@example.test', name: 'Grace Hopper' });
  await personalToken(db, grace.id, { name: 'deploy script', scopes: ['groups:read-only'] });
  await oauthTokens(idp.url, await makeClient(db, { name: 'Build Monitor' }), grace);

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

    await page.getByRole('button', { name: 'Sign out' }).click();
    await signInThroughPage(page, idp.url, charles);
    await page.goto(`${idp.url}/account/settings/profile`);
    await page.getByLabel('E-mail address').fill('charles.babbage@example.test');
    await page.getByLabel('Current password').fill(charles.password);
    await page.getByRole('button', { name: 'Save profile' }).click();
    await page.getByTestId('pending-email').waitFor();
    await page.screenshot({ path: file('email-pending'), fullPage: true });
    await page.getByRole('button', { name: 'Sign out' }).click();

    await page.goto(await issueLink(db, idp.url, 'reset-password', grace));
    await page.getByLabel('New password', { exact: true }).fill('an entirely new passphrase');
    await page.getByLabel('New password again').fill('an entirely new passphrase');
    await page.getByRole('button', { name: 'Set the new password' }).click();
    await page.getByRole('heading', { name: 'What else reaches your account' }).waitFor();
    await page.screenshot({ path: file('reset-done'), fullPage: true });
  });
  console.log(`wrote forgot-password, reset-password, verify-banner, email-pending and reset-done (desktop and -phone) to ${OUT}`);
}, { MAIL_DIR: MAIL_DIR });
