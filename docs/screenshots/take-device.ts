/**
 * Takes the docs' screenshots of the device flow's pages as the person sees them: entering the
 * code (with a wrong one, said beside the field, on a phone), checking it on the confirmation page,
 * and the success page, at desktop width and on a phone (390 px), from a real server on a
 * throwaway SQLite database, in the system's Chromium. Run from the repository root:
 *
 *   npx tsx docs/screenshots/take-device.ts
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as client from 'openid-client';
import type { Browser } from 'playwright-core';
import { makeApp, makeGroup, makeUser, type TestUser } from '../../test/helpers/factories.js';
import { signInThroughPage } from '../../test/e2e/support.js';
import type { RunningIdp } from '../../test/helpers/app.js';
import { takeScreenshots } from './session.js';

const OUT = fileURLToPath(new URL('.', import.meta.url));
const SIZES = { desktop: { width: 1200, height: 760 }, phone: { width: 390, height: 844 } } as const;
/** What a smart TV's app might send as its User-Agent, shown on the confirmation page. */
const TV_AGENT = 'Mozilla/5.0 (SMART-TV; Linux; Tizen 6.5) AppleWebKit/537.36 (KHTML, like Gecko) LoomTV/2.3 Chrome/85.0 TV Safari/537.36';

takeScreenshots(async (idp, chromium) => {
  const ada = await makeUser(idp.db, { username: 'ada', email: 'ada@example.test', name: 'Ada Lovelace' });
  const group = await makeGroup(idp.db, ada.id, { name: 'Analytical Engines', path: 'engines' });
  const app = await makeApp(idp.db, ada.id, group.id, { name: 'Loom TV', deviceFlow: true });
  const config = await client.discovery(new URL(idp.url), app.clientId, app.clientSecret, undefined, { execute: [client.allowInsecureRequests] });
  config[client.customFetch] = (url, options) => {
    const headers = new Headers(options.headers);
    headers.set('user-agent', TV_AGENT);
    return fetch(url, { ...options, headers } as RequestInit);
  };
  for (const [size, viewport] of Object.entries(SIZES)) {
    await shoot(idp, chromium, config, ada, size, viewport);
  }
  console.log(`wrote device-code-*.png, device-confirm-*.png, device-success-*.png to ${OUT}`);
}, { DEVICE_POLL_INTERVAL_S: '1' });

async function shoot(idp: RunningIdp, chromium: Browser, config: client.Configuration, ada: TestUser, size: string, viewport: { width: number; height: number }) {
  const response = await client.initiateDeviceAuthorization(config, { scope: 'openid groups:read-only' });
  const polled = client.pollDeviceAuthorizationGrant(config, response);
  const context = await chromium.newContext({ viewport, deviceScaleFactor: 1 });
  const page = await context.newPage();
  await signInThroughPage(page, idp.url, ada);
  await page.goto(`${idp.url}/login/device`);
  if (size === 'phone') {
    // A mistyped code, said beside the field.
    await page.getByLabel('Code').fill('BCDF-GHJK');
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByTestId('error-message').waitFor();
  } else {
    await page.getByLabel('Code').fill(response.user_code);
  }
  await page.screenshot({ path: join(OUT, `device-code-${size}.png`), fullPage: true });
  await page.getByLabel('Code').fill(response.user_code);
  await page.getByRole('button', { name: 'Continue' }).click();
  await page.getByTestId('device-confirm').waitFor();
  await page.screenshot({ path: join(OUT, `device-confirm-${size}.png`), fullPage: true });
  await page.getByRole('button', { name: 'Continue' }).click();
  const authorize = page.getByRole('button', { name: 'Authorize' });
  const success = page.getByTestId('device-success');
  await Promise.race([authorize.waitFor(), success.waitFor()]);
  if (await authorize.isVisible()) await authorize.click();
  await success.waitFor();
  await page.screenshot({ path: join(OUT, `device-success-${size}.png`), fullPage: true });
  await polled;
  await context.close();
}
