/**
 * Takes the docs' screenshots of re-authentication: the Confirm access prompt a form leads to
 * when the session's sign-in is older than ten minutes (with a code and a passkey offered),
 * Passkeys asking for the password before Add, and what an account whose address is not verified
 * sees on Access tokens and gets from the app's set-up, at a desktop width (1200 px) and a
 * phone's (390 px), from a real server on a throwaway SQLite database, in the system's Chromium.
 * Run from the repository root (SCREENSHOTS_OUT=dir writes them elsewhere):
 *
 *   npx tsx docs/screenshots/take-confirm-access.ts
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { signInThroughPage } from '../../test/e2e/support.js';
import { makeUser } from '../../test/helpers/factories.js';
import { ageSession } from '../../test/helpers/sessions.js';
import { withTwoFactor } from '../../test/helpers/totp.js';
import { takeScreenshots } from './session.js';

const OUT = process.env.SCREENSHOTS_OUT ?? fileURLToPath(new URL('.', import.meta.url));
const WIDTHS = { desktop: { width: 1200, height: 760 }, phone: { width: 390, height: 844 } };

async function addVirtualPasskey(page: Page): Promise<void> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
  });
}

async function sessionId(page: Page): Promise<string | undefined> {
  return (await page.context().cookies()).find((c) => c.name === 'idp_session')?.value;
}

// A host name, not an IP address: passkeys need one. Verified addresses required, as in production.
takeScreenshots(async (idp, chromium) => {
  for (const [width, viewport] of Object.entries(WIDTHS)) {
    const ada = await makeUser(idp.db, { username: `ada-${width}`, email: `ada-${width}@example.test`, name: 'Ada Lovelace' });
    await idp.db('users').where({ id: ada.id }).update({ email_verified_at: new Date().toISOString() });
    const context = await chromium.newContext({ viewport, deviceScaleFactor: 1 });
    const page = await context.newPage();
    await addVirtualPasskey(page);
    await signInThroughPage(page, idp.url, ada);
    await page.goto(`${idp.url}/account/settings/passkeys`);
    await page.getByLabel('Passkey name').fill('Laptop');
    await Promise.all([page.waitForURL(/notice=added/), page.getByRole('button', { name: 'Add a passkey' }).click()]);
    await withTwoFactor(idp.db, ada);

    // Eleven minutes later, as far as the session knows.
    await ageSession(idp, await sessionId(page), 11);
    await page.goto(`${idp.url}/account/settings/passkeys`);
    await page.screenshot({ path: join(OUT, `passkeys-confirm-first-${width}.png`), fullPage: true });
    await page.goto(`${idp.url}/account/settings/tokens`);
    await page.getByLabel('Token name').fill('deploy script');
    await page.getByLabel('groups:read-only').check();
    await page.getByRole('button', { name: 'Generate token' }).click();
    await page.getByRole('heading', { name: 'Confirm access' }).waitFor();
    await page.screenshot({ path: join(OUT, `confirm-access-${width}.png`), fullPage: true });
    await context.close();

    const bob = await makeUser(idp.db, { username: `bob-${width}`, email: `bob-${width}@example.test`, name: 'Bob' });
    const unverified = await chromium.newContext({ viewport, deviceScaleFactor: 1 });
    const bobPage = await unverified.newPage();
    await signInThroughPage(bobPage, idp.url, bob);
    await bobPage.goto(`${idp.url}/account/settings/tokens`);
    await bobPage.screenshot({ path: join(OUT, `tokens-verify-first-${width}.png`), fullPage: true });
    await bobPage.goto(`${idp.url}/account/settings/two-factor/setup`);
    await bobPage.screenshot({ path: join(OUT, `verify-first-${width}.png`), fullPage: true });
    await unverified.close();
  }
  console.log(`wrote the Confirm access screenshots to ${OUT}`);
}, { ISSUER: 'http://localhost:{port}', REQUIRE_VERIFIED_EMAIL: 'true' });
