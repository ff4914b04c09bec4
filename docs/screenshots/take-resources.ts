/**
 * Takes the docs' screenshots of a group's Settings → Resources: the list of resources, Register
 * resource filled in, and the resource's page as registering it opens it (its introspection
 * secret shown this once), on a desktop and on a 390 px phone, from a real server on a throwaway
 * SQLite database, in the system's Chromium. Run from the repository root:
 *
 *   npx tsx docs/screenshots/take-resources.ts
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { createResource } from '../../src/services/resources/manage.js';
import { signInThroughPage } from '../../test/e2e/support.js';
import { groupAccess, makeGroup, makeUser } from '../../test/helpers/factories.js';
import { takeScreenshots } from './session.js';

const OUT = fileURLToPath(new URL('.', import.meta.url));
const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1200, height: 800 };

takeScreenshots(async (idp, chromium) => {
  const written: string[] = [];
  const db = idp.idp.db;
  const ada = await makeUser(db, { username: 'ada', email: 'ada@example.test', name: 'Ada Lovelace' });
  await db('users').update({ email_verified_at: new Date().toISOString() });
  const group = await makeGroup(db, ada.id, { name: 'Analytical Engines', path: 'engines' });
  const access = await groupAccess(db, ada.id, group.id);
  const deps = { db, issuer: idp.url };
  await createResource(deps, access, {
    identifier: 'https://mill.engines.example/mcp',
    name: 'Mill MCP server',
    tokenFormat: 'opaque',
    scopes: [
      { name: 'mill:read', description: 'See the mill\'s jobs and their results' },
      { name: 'mill:run', description: 'Start and stop jobs on the mill' },
      { name: 'cards:write', description: 'Punch new operation cards' },
    ],
  });
  await createResource(deps, access, {
    identifier: 'https://store.engines.example/api',
    name: 'Store API',
    tokenFormat: 'jwt',
    scopes: [{ name: 'store:read', description: 'Read the numbers held in the store' }],
  });

  const shot = async (page: Page, file: string) => {
    await page.waitForLoadState('networkidle');
    await page.screenshot({ path: join(OUT, file), fullPage: true });
    written.push(file);
  };
  const withPage = async (viewport: { width: number; height: number }, run: (page: Page) => Promise<void>) => {
    const context = await chromium.newContext({ viewport, deviceScaleFactor: 1 });
    try {
      const page = await context.newPage();
      await signInThroughPage(page, idp.url, ada);
      await run(page);
    } finally {
      await context.close();
    }
  };
  const list = `${idp.url}/groups/engines/settings/resources`;

  // The list first, as two resources; then each viewport registers one of its own.
  await withPage(DESKTOP, async (page) => {
    await page.goto(list);
    await shot(page, 'resources-desktop.png');
  });
  await withPage(PHONE, async (page) => {
    await page.goto(list);
    await shot(page, 'resources-phone.png');
  });
  for (const [viewport, suffix, host] of [[DESKTOP, 'desktop', 'notebook'], [PHONE, 'phone', 'cards']] as const) {
    await withPage(viewport, async (page) => {
      await page.goto(`${list}/new`);
      await page.getByLabel('Identifier').fill(`https://${host}.engines.example/mcp`);
      await page.getByLabel('Name', { exact: true }).fill('Notebook MCP server');
      await page.getByLabel('Scope 1', { exact: true }).fill('notes:read');
      await page.getByLabel('Description of scope 1').fill('Read your notes on the engine');
      await page.getByLabel('Scope 2', { exact: true }).fill('notes:write');
      await page.getByLabel('Description of scope 2').fill('Write and change your notes');
      await shot(page, `resource-new-${suffix}.png`);
      await Promise.all([page.waitForURL(/\?notice=created$/), page.getByRole('button', { name: 'Register resource' }).click()]);
      await shot(page, `resource-${suffix}.png`);
    });
  }
  console.log(`wrote ${written.join(', ')} to ${OUT}`);
});
