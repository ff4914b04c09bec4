/**
 * Takes the docs' screenshots of the pages that follow the browser's language: an
 * application's sign-in in German (desktop) and its consent page in Japanese (a phone, dark
 * mode), from a real server on a throwaway SQLite database, in the system's Chromium. Run from
 * the repository root:
 *
 *   npx tsx docs/screenshots/take-languages.ts
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeClient, makeUser } from '../../test/helpers/factories.js';
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
  console.log(`wrote ${shots.map((s) => s.file).join(', ')} to ${OUT}`);
});
