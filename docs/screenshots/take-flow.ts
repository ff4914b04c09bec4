/**
 * Takes the docs' screenshots of the authorization flow's sign-in and consent pages (an
 * application asking with a scope it does not know, so consent names it as ignored), a group's
 * Members at desktop width, and sign-up on a phone (390 px), from a real server on a throwaway
 * SQLite database, in the system's Chromium. Run from the repository root:
 *
 *   npx tsx docs/screenshots/take-flow.ts
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { addMember } from '../../src/services/groups.js';
import { groupAccess, makeApp, makeGroup, makeUser } from '../../test/helpers/factories.js';
import { authorizeUrl } from '../../test/helpers/oauth.js';
import { takeScreenshots } from './session.js';

const OUT = fileURLToPath(new URL('.', import.meta.url));
const DESKTOP = { width: 1200, height: 760 };
const PHONE = { width: 390, height: 844 };

takeScreenshots(async (idp, chromium) => {
  const ada = await makeUser(idp.db, { username: 'ada', email: 'ada@example.test', name: 'Ada Lovelace' });
  const group = await makeGroup(idp.db, ada.id, { name: 'Analytical Engines', path: 'engines' });
  for (const [username, name] of [['charles', 'Charles Babbage'], ['mary', 'Mary Somerville']] as const) {
    await makeUser(idp.db, { username, email: `${username}@example.test`, name });
    await addMember(idp.db, await groupAccess(idp.db, ada.id, group.id), { user: username, role: username === 'charles' ? 'maintainer' : 'member' });
  }
  const { clientId } = await makeApp(idp.db, ada.id, group.id, { name: 'Loom Scheduler', callbackURL: 'https://loom.example.test/auth/callback' });

  const desktop = await chromium.newContext({ viewport: DESKTOP, deviceScaleFactor: 1 });
  const page = await desktop.newPage();
  await page.goto(authorizeUrl(idp.url, { clientId, redirectUri: 'https://loom.example.test/auth/callback', scope: 'user groups:read-only' }));
  await page.getByLabel('Username or email').waitFor();
  await page.screenshot({ path: join(OUT, 'sign-in.png') });
  await page.getByLabel('Username or email').fill(ada.username);
  await page.getByLabel('Password').fill(ada.password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByRole('button', { name: 'Authorize' }).waitFor();
  await page.screenshot({ path: join(OUT, 'consent.png'), fullPage: true });

  await page.goto(`${idp.url}/groups/engines/settings/members`);
  await page.screenshot({ path: join(OUT, 'members.png'), fullPage: true });
  await desktop.close();

  const phone = await chromium.newContext({ viewport: PHONE, deviceScaleFactor: 1 });
  const phonePage = await phone.newPage();
  await phonePage.goto(`${idp.url}/signup`);
  await phonePage.screenshot({ path: join(OUT, 'signup-phone.png'), fullPage: true });
  await phone.close();
  console.log(`wrote sign-in.png, consent.png, members.png, signup-phone.png to ${OUT}`);
});
