/**
 * Takes the docs' screenshots of signing in with a directory (LDAP): the sign-in form naming the
 * directory, Admin → Sign-in providers → Add for an LDAP directory, the provider's page after Test
 * a user, and Sign-in methods of an account the directory keeps, at 1200 px and as a 390 px
 * phone, from a real server on a throwaway SQLite database and a real OpenLDAP (Debian's slapd,
 * as the tests start it), in the system's Chromium. Run from the repository root:
 *
 *   npx tsx docs/screenshots/take-directory.ts
 */
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { fileURLToPath } from 'node:url';
import { setSiteAdmin } from '../../src/services/admin.js';
import { createProvider } from '../../src/services/federation/manage.js';
import { createGroup } from '../../src/services/groups.js';
import { signInThroughPage } from '../../test/e2e/support.js';
import { makeUser } from '../../test/helpers/factories.js';
import { directorySettings, ldapGroups, ldapPeople, startSlapd } from '../../test/helpers/slapd.js';
import { CLI, DESKTOP_AND_PHONE, takeScreenshots } from './session.js';

const OUT = fileURLToPath(new URL('.', import.meta.url));

takeScreenshots(async (idp, chromium) => {
  const db = idp.idp.db;
  const slapd = await startSlapd();
  try {
    const ada = await makeUser(db, { username: 'ada', email: 'ada@example.test', name: 'Ada Lovelace' });
    await setSiteAdmin(db, CLI, ada, true);
    await createGroup(db, { userId: ada.id, ip: null }, { name: 'Platform', path: 'platform' });
    await createProvider({ db, cipher: undefined }, CLI, {
      kind: 'ldap', slug: 'corp', name: 'Corp directory', client_id: slapd.serviceDn, client_secret: slapd.servicePassword,
      settings: directorySettings(slapd, `${ldapGroups.developers.dn} = platform member\n${ldapGroups.admins.dn} = platform maintainer`),
      allow_sign_up: true,
    });

    const files: string[] = [];
    for (const { suffix, viewport } of DESKTOP_AND_PHONE) {
      const shot = async (page: Page, name: string) => {
        await page.screenshot({ path: join(OUT, `${name}${suffix}.png`), fullPage: true });
        files.push(`${name}${suffix}.png`);
      };
      const visitor = await chromium.newContext({ viewport, deviceScaleFactor: 1 });
      try {
        const page = await visitor.newPage();
        await page.goto(`${idp.url}/login`);
        await page.getByTestId('directory-hint').waitFor();
        await page.getByLabel('Username or email').fill('alice');
        await shot(page, 'sign-in-directory');
        await page.getByLabel('Password').fill(ldapPeople.alice.password);
        await Promise.all([page.waitForURL(`${idp.url}/groups`), page.getByRole('button', { name: 'Sign in', exact: true }).click()]);
        await page.goto(`${idp.url}/account/settings/sign-in-methods`);
        await shot(page, 'sign-in-methods-directory');
      } finally {
        await visitor.close();
      }
      const admin = await chromium.newContext({ viewport, deviceScaleFactor: 1 });
      try {
        const page = await admin.newPage();
        await signInThroughPage(page, idp.url, ada);
        await page.goto(`${idp.url}/admin/providers/new?kind=ldap`);
        await shot(page, 'admin-directory-add');
        await page.goto(`${idp.url}/admin/providers/corp`);
        await page.getByLabel('Username', { exact: true }).fill('alice');
        await Promise.all([page.waitForURL(/test-user/), page.getByTestId('test-user').click()]);
        await page.getByTestId('user-found').waitFor();
        await shot(page, 'admin-directory-test-user');
      } finally {
        await admin.close();
      }
    }
    console.log(`wrote ${files.join(', ')} to ${OUT}`);
  } finally {
    await slapd.close();
  }
});
