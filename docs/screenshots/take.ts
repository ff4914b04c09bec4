/**
 * Takes the docs' screenshots of the OAuth application pages (Developer list, new application
 * form, edit view with the secret shown once) from a real server on a throwaway SQLite database,
 * in the system's Chromium. Run from the repository root:
 *
 *   npx tsx docs/screenshots/take.ts
 *
 * It follows the same click path as test/e2e/apps.browser.test.ts, by visible labels.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createApplication } from '../../src/services/apps.js';
import { signInThroughPage } from '../../test/e2e/support.js';
import { groupAccess, makeGroup, makeUser } from '../../test/helpers/factories.js';
import { takeScreenshots } from './session.js';

const OUT = fileURLToPath(new URL('.', import.meta.url));
const VIEWPORT = { width: 900, height: 700 };

takeScreenshots(async (idp, chromium) => {
  const db = idp.idp.db;
  const ada = await makeUser(db, { username: 'ada', email: 'ada@example.test', name: 'Ada Lovelace' });
  const group = await makeGroup(db, ada.id, { name: 'Analytical Engines', path: 'engines' });
  await createApplication(db, await groupAccess(db, ada.id, group.id), {
    name: 'Loom Scheduler',
    homepageURL: 'https://loom.example.test',
    description: 'Plans the weaving of punched cards',
    callbackURL: 'https://loom.example.test/auth/callback',
  });

  const context = await chromium.newContext({ viewport: VIEWPORT, deviceScaleFactor: 1 });
  const page = await context.newPage();
  const shot = (name: string, fullPage = false) => page.screenshot({ path: join(OUT, name), fullPage });

  await signInThroughPage(page, idp.url, ada);
  await page.getByRole('link', { name: 'Analytical Engines' }).click();
  await page.getByRole('link', { name: 'Settings', exact: true }).click();
  await page.getByRole('link', { name: 'Developer', exact: true }).click();
  await page.getByRole('link', { name: 'New application' }).click();
  await page.getByLabel('Application name').fill('Difference Engine');
  await page.getByLabel('Homepage URL').fill('https://engine.example.test');
  await page.getByLabel('Description').fill('Tabulates polynomials by the method of differences');
  await page.getByLabel('Authorization callback URL').fill('https://engine.example.test/oauth/callback');
  // The whole form, down to its Create button.
  await page.evaluate('window.scrollTo(0, 0)');
  await shot('new-application.png', true);

  await page.getByRole('button', { name: 'Create', exact: true }).click();
  await page.getByTestId('client-secret').waitFor();
  await shot('application-secret.png');

  await page.getByRole('link', { name: 'Developer', exact: true }).click();
  await page.getByTestId('app-row').first().waitFor();
  await shot('developer.png');

  await context.close();
  console.log(`wrote developer.png, new-application.png, application-secret.png to ${OUT}`);
});
