/**
 * Takes the docs' screenshots of two-factor authentication: the set-up page (QR code and key),
 * the recovery codes, the second step of a sign-in (with a passkey offered), and a group's
 * Members with the "No 2FA" mark, at a desktop width (1200 px) and a phone's (390 px), from a real
 * server on a throwaway SQLite database, in the system's Chromium. Run from the repository root:
 *
 *   npx tsx docs/screenshots/take-two-factor.ts
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { addMember } from '../../src/services/groups.js';
import { signInThroughPage } from '../../test/e2e/support.js';
import { groupAccess, makeGroup, makeUser } from '../../test/helpers/factories.js';
import { codeFor } from '../../test/helpers/totp.js';
import { takeScreenshots } from './session.js';

const OUT = fileURLToPath(new URL('.', import.meta.url));
const WIDTHS = { desktop: { width: 1200, height: 760 }, phone: { width: 390, height: 844 } };

async function addVirtualPasskey(page: Page): Promise<void> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
  });
}

// A host name, not an IP address: passkeys need one.
takeScreenshots(async (idp, chromium) => {
  for (const [width, viewport] of Object.entries(WIDTHS)) {
    const ada = await makeUser(idp.db, { username: `ada-${width}`, email: `ada-${width}@example.test`, name: 'Ada Lovelace' });
    const charles = await makeUser(idp.db, { username: `charles-${width}`, email: `charles-${width}@example.test`, name: 'Charles Babbage' });
    const group = await makeGroup(idp.db, ada.id, { name: 'Analytical Engines', path: `engines-${width}` });
    await addMember(idp.db, await groupAccess(idp.db, ada.id, group.id), { user: charles.username, role: 'maintainer' });

    const context = await chromium.newContext({ viewport, deviceScaleFactor: 1 });
    const page = await context.newPage();
    await addVirtualPasskey(page);
    await signInThroughPage(page, idp.url, ada);
    await page.goto(`${idp.url}/account/settings/two-factor`);
    await page.getByRole('button', { name: 'Set up an authenticator app' }).click();
    await page.getByTestId('totp-qr').waitFor();
    await page.screenshot({ path: join(OUT, `two-factor-setup-${width}.png`), fullPage: true });
    const secret = (await page.getByTestId('totp-secret').textContent())!.replace(/\s/g, '');
    await page.getByLabel('Code from your app').fill(await codeFor(secret));
    await page.getByRole('button', { name: 'Turn on two-factor authentication' }).click();
    await page.getByTestId('recovery-codes').waitFor();
    await page.screenshot({ path: join(OUT, `recovery-codes-${width}.png`), fullPage: true });

    await page.goto(`${idp.url}/account/settings/passkeys`);
    await page.getByLabel('Passkey name').fill('Laptop');
    await Promise.all([page.waitForURL(/notice=added/), page.getByRole('button', { name: 'Add a passkey' }).click()]);
    await page.screenshot({ path: join(OUT, `passkeys-${width}.png`), fullPage: true });

    await page.goto(`${idp.url}/groups/${group.path}/settings`);
    await page.getByLabel('Require two-factor authentication').check();
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.goto(`${idp.url}/groups/${group.path}/settings/members`);
    await page.screenshot({ path: join(OUT, `members-two-factor-${width}.png`), fullPage: true });

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.goto(`${idp.url}/login`);
    await page.getByLabel('Username or email').fill(ada.username);
    await page.getByLabel('Password').fill(ada.password);
    await Promise.all([page.waitForURL(/\/login\/two-factor/), page.getByRole('button', { name: 'Sign in', exact: true }).click()]);
    await page.screenshot({ path: join(OUT, `two-factor-step-${width}.png`), fullPage: true });
    await context.close();
  }
  console.log(`wrote the two-factor screenshots to ${OUT}`);
}, { ISSUER: 'http://localhost:{port}' });
