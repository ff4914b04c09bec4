/**
 * Takes the docs' screenshots of group and application management and of the layout on a
 * phone: a group's members as labelled rows at 390 px (and as a maintainer sees them), a long
 * unbroken name that wraps, the application page in dark mode, the group deletion page, a public
 * application, the API reference, and a member without two-factor authentication sent from a
 * group that requires it to set it up (and the Groups list marking that group), from a real server on a throwaway SQLite database, in the system's Chromium. Run
 * from the repository root:
 *
 *   npx tsx docs/screenshots/take-groups.ts
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { addMember } from '../../src/services/groups.js';
import { signInThroughPage } from '../../test/e2e/support.js';
import { groupAccess, makeApp, makeGroup, makeUser } from '../../test/helpers/factories.js';
import { oauthTokens } from '../../test/helpers/oauth.js';
import { takeScreenshots } from './session.js';

const OUT = fileURLToPath(new URL('.', import.meta.url));
const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1200, height: 800 };

takeScreenshots(async (idp, chromium) => {
  const written: string[] = [];
  const db = idp.idp.db;
  const ada = await makeUser(db, { username: 'ada', email: 'ada@example.test', name: 'Ada Lovelace' });
  const group = await makeGroup(db, ada.id, { name: 'Analytical Engines', path: 'engines' });
  const access = await groupAccess(db, ada.id, group.id);
  // One of each role, as the Members page explains them.
  const people: Record<string, { username: string; password: string }> = { ada };
  for (const [username, name, role] of [['charles', 'Charles Babbage', 'maintainer'], ['mary', 'Mary Somerville', 'member']] as const) {
    people[username] = await makeUser(db, { username, email: `${username}@example.test`, name });
    await addMember(db, access, { user: username, role });
  }
  // A group that requires two-factor authentication, which Mary (without it) belongs to.
  const vault = await makeGroup(db, ada.id, { name: 'Difference Vault', path: 'vault' });
  await addMember(db, await groupAccess(db, ada.id, vault.id), { user: 'mary', role: 'member' });
  await db('groups').where({ id: vault.id }).update({ require_two_factor: true });
  const loom = await makeApp(db, ada.id, group.id, { name: 'Loom Scheduler', callbackURL: 'http://127.0.0.1:9999/callback' });
  for (const username of ['charles', 'mary']) {
    await oauthTokens(idp.url, { clientId: loom.clientId, clientSecret: loom.clientSecret, redirectUri: 'http://127.0.0.1:9999/callback' }, { username, password: 'correct horse battery' });
  }
  const phoneApp = await makeApp(db, ada.id, group.id, { name: 'Engine Companion (iOS)', type: 'public' });
  const long = await makeGroup(db, ada.id, { name: `Supercalifragilistic${'expialidocious'.repeat(5)}`, path: 'long-name' });
  await db('groups').where({ id: long.id }).update({ description: `https://example.test/${'a-very-long-unbroken-path-'.repeat(8)}` });
  // Verified addresses: no banner asking for it above the pages.
  await db('users').update({ email_verified_at: new Date().toISOString() });

  type Options = { viewport: { width: number; height: number }; colorScheme?: 'dark'; as?: string };
  const shoot = async (file: string, options: Options, path: string, fullPage = true) => {
    const context = await chromium.newContext({ viewport: options.viewport, colorScheme: options.colorScheme, deviceScaleFactor: 1 });
    try {
      const page = await context.newPage();
      await signInThroughPage(page, idp.url, people[options.as ?? 'ada']!);
      await page.goto(`${idp.url}${path}`);
      await page.waitForLoadState('networkidle');
      await page.screenshot({ path: join(OUT, file), fullPage });
      written.push(file);
    } finally {
      await context.close();
    }
  };
  const appPage = (clientId: string) => `/groups/engines/settings/developer/apps/${clientId}`;
  await shoot('members-phone.png', { viewport: PHONE }, '/groups/engines/settings/members');
  await shoot('long-name-phone.png', { viewport: PHONE }, '/groups/long-name');
  await shoot('application-dark.png', { viewport: DESKTOP, colorScheme: 'dark' }, appPage(loom.clientId));
  await shoot('public-application.png', { viewport: DESKTOP }, appPage(phoneApp.clientId));
  await shoot('delete-group.png', { viewport: DESKTOP }, '/groups/engines/settings/delete');
  await shoot('api-docs.png', { viewport: DESKTOP }, '/apis/v2/docs', false);
  await shoot('members-maintainer.png', { viewport: DESKTOP, as: 'charles' }, '/groups/engines/settings/members');
  await shoot('groups-two-factor-required.png', { viewport: DESKTOP, as: 'mary' }, '/groups');
  await shoot('two-factor-required-desktop.png', { viewport: DESKTOP, as: 'mary' }, '/groups/vault');
  await shoot('two-factor-required-phone.png', { viewport: PHONE, colorScheme: 'dark', as: 'mary' }, '/groups/vault');
  console.log(`wrote ${written.join(', ')} to ${OUT}`);
});
