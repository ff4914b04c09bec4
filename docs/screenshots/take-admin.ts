/**
 * Takes the docs' screenshots of the Admin area's users list, at 1200 px and as a 390 px
 * phone, from a real server on a throwaway SQLite database, in the system's Chromium. Run from
 * the repository root:
 *
 *   npx tsx docs/screenshots/take-admin.ts
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { disableUser, setSiteAdmin } from '../../src/services/admin.js';
import { signInThroughPage } from '../../test/e2e/support.js';
import { makeUser } from '../../test/helpers/factories.js';
import { CLI, takeScreenshots } from './session.js';

const OUT = fileURLToPath(new URL('.', import.meta.url));
const SIZES = [
  { file: 'admin-users.png', viewport: { width: 1200, height: 720 } },
  { file: 'admin-users-phone.png', viewport: { width: 390, height: 844 } },
];

const PEOPLE = [
  ['ada', 'Ada Lovelace'],
  ['charles', 'Charles Babbage'],
  ['grace', 'Grace Hopper'],
  ['alan', 'Alan Turing'],
  ['mallory', 'Mallory Example'],
  ['katherine', 'Katherine Johnson'],
] as const;

takeScreenshots(async (idp, chromium) => {
  const db = idp.idp.db;
  const users = [];
  for (const [username, name] of PEOPLE) users.push(await makeUser(db, { username, email: `${username}@example.test`, name }));
  // Verified addresses: no banner asking for it above the list.
  await db('users').update({ email_verified_at: new Date().toISOString() });
  const ada = users[0]!;
  await setSiteAdmin(db, CLI, ada, true);
  await disableUser({ db, provider: idp.idp.provider }, CLI, users.find((u) => u.username === 'mallory')!);

  for (const { file, viewport } of SIZES) {
    const context = await chromium.newContext({ viewport, deviceScaleFactor: 1 });
    try {
      const page = await context.newPage();
      await signInThroughPage(page, idp.url, ada);
      await page.getByRole('link', { name: 'Admin', exact: true }).click();
      await page.getByTestId('user-row').first().waitFor();
      await page.screenshot({ path: join(OUT, file), fullPage: true });
    } finally {
      await context.close();
    }
  }
  console.log(`wrote ${SIZES.map((s) => s.file).join(', ')} to ${OUT}`);
});
