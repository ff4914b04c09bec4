/**
 * Takes the docs' screenshots of pages in German and Japanese: an application's sign-in in
 * German (desktop) and its consent page in Japanese (a phone, dark mode); signed in, Profile with
 * its Language setting in German, a group's Members in Japanese (a phone, dark mode), Access
 * tokens in German (dark mode) and the administrator's user list in Japanese; from a real server
 * on a throwaway SQLite database, in the system's Chromium. Run from the repository root:
 *
 *   npx tsx docs/screenshots/take-languages.ts
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { groupAccess, makeApp, makeClient, makeGroup, makeUser } from '../../test/helpers/factories.js';
import { setSiteAdmin } from '../../src/services/admin.js';
import { addMember } from '../../src/services/groups.js';
import { authorizeUrl } from '../../test/helpers/oauth.js';
import { takeScreenshots } from './session.js';

const OUT = fileURLToPath(new URL('.', import.meta.url));

takeScreenshots(async (idp, chromium) => {
  const client = await makeClient(idp.idp.db, { name: 'Build Monitor Dashboard' });
  const start = authorizeUrl(idp.url, { clientId: client.clientId, redirectUri: client.redirectUri, scope: 'groups:read-only email openid' });
  const shots = [
    { file: 'sign-in-de.png', lang: 'de', viewport: { width: 1200, height: 800 }, consent: false },
    { file: 'consent-ja-phone.png', lang: 'ja', viewport: { width: 390, height: 844 }, colorScheme: 'dark' as const, consent: true },
  ];
  for (const shot of shots) {
    const context = await chromium.newContext({ locale: shot.lang, extraHTTPHeaders: { 'Accept-Language': shot.lang }, viewport: shot.viewport, colorScheme: shot.colorScheme, deviceScaleFactor: 1 });
    try {
      const page = await context.newPage();
      await page.goto(start);
      if (shot.consent) {
        const user = await makeUser(idp.idp.db, { username: 'hanako', name: 'Hanako Yamada' });
        await page.fill('#login', user.username);
        await page.fill('#password', user.password);
        await Promise.all([page.waitForSelector('.consent'), page.click('button.primary')]);
      }
      await page.screenshot({ path: join(OUT, shot.file), fullPage: true });
    } finally {
      await context.close();
    }
  }

  // Signed in: an administrator who owns a group with members and an application.
  const owner = await makeUser(idp.idp.db, { username: 'hanna', name: 'Hanna Schmidt' });
  await setSiteAdmin(idp.idp.db, { userId: 0, ip: null, admin: true }, owner, true);
  const group = await makeGroup(idp.idp.db, owner.id, { name: 'Wohnzimmer-Bildschirme', path: 'wohnzimmer' });
  await makeApp(idp.idp.db, owner.id, group.id, { name: 'TV App' });
  const access = await groupAccess(idp.idp.db, owner.id, group.id);
  for (const [username, name, role] of [['kenji', 'Kenji Sato', 'maintainer'], ['yuki', 'Yuki Tanaka', 'member']] as const) {
    await makeUser(idp.idp.db, { username, name });
    await addMember(idp.idp.db, access, { user: username, role });
  }
  const signedIn = [
    { file: 'profile-de.png', lang: 'de', path: '/account/settings/profile', viewport: { width: 1200, height: 800 } },
    { file: 'members-ja-phone.png', lang: 'ja', path: '/groups/wohnzimmer/settings/members', viewport: { width: 390, height: 844 }, colorScheme: 'dark' as const },
    { file: 'tokens-de-dark.png', lang: 'de', path: '/account/settings/tokens', viewport: { width: 1200, height: 800 }, colorScheme: 'dark' as const },
    { file: 'admin-users-ja.png', lang: 'ja', path: '/admin/users', viewport: { width: 1200, height: 800 } },
  ];
  for (const shot of signedIn) {
    const context = await chromium.newContext({ locale: shot.lang, extraHTTPHeaders: { 'Accept-Language': shot.lang }, viewport: shot.viewport, colorScheme: shot.colorScheme, deviceScaleFactor: 1 });
    try {
      const page = await context.newPage();
      await page.goto(`${idp.url}/login`);
      await page.fill('#login', owner.username);
      await page.fill('#password', owner.password);
      await Promise.all([page.waitForURL(/\/groups/), page.click('button.primary')]);
      await page.goto(`${idp.url}${shot.path}`);
      await page.screenshot({ path: join(OUT, shot.file), fullPage: true });
    } finally {
      await context.close();
    }
  }
  console.log(`wrote ${[...shots, ...signedIn].map((s) => s.file).join(', ')} to ${OUT}`);
});
