/**
 * Takes the docs' screenshots of signing in with a sign-in provider, at 1200 px and as a
 * 390 px phone: the sign-in page with Continue with <name>, the sign-up page prefilled from the
 * provider, and the page that links the provider to the account with the same address. The
 * provider is a second Horizon ID, started here too, with the first registered there as an
 * application; everything on throwaway SQLite databases, in the system's Chromium. Run from the
 * repository root:
 *
 *   npx tsx docs/screenshots/take-federation.ts
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { insertSignInProvider } from '../../src/db/sign-in-providers.js';
import { sealClientSecret } from '../../src/services/federation/providers.js';
import { now } from '../../src/time.js';
import { startIdp } from '../../test/helpers/app.js';
import { makeApp, makeGroup, makeUser } from '../../test/helpers/factories.js';
import { takeScreenshots } from './session.js';

const OUT = fileURLToPath(new URL('.', import.meta.url));
const SIZES = [
  { suffix: 'desktop', viewport: { width: 1200, height: 800 } },
  { suffix: 'phone', viewport: { width: 390, height: 844 } },
];

async function shoot(page: Page, name: string): Promise<void> {
  for (const { suffix, viewport } of SIZES) {
    await page.setViewportSize(viewport);
    await page.screenshot({ path: join(OUT, `${name}-${suffix}.png`), fullPage: true });
  }
}

/** At the provider: signs in, then authorizes the first Horizon ID. */
async function passUpstream(page: Page, upstream: string, person: { username: string; password: string }): Promise<void> {
  await page.waitForURL(`${upstream}/**`);
  await page.getByLabel('Username or email').fill(person.username);
  await page.getByLabel('Password').fill(person.password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByRole('button', { name: 'Authorize' }).click();
}

takeScreenshots(async (idp, chromium) => {
  const upstream = await startIdp('sqlite');
  try {
    const owner = await makeUser(upstream.db, { username: 'corp-admin', email: 'it@corp.example' });
    const group = await makeGroup(upstream.db, owner.id, { name: 'Corp IT', path: 'corp-it' });
    const registration = await makeApp(upstream.db, owner.id, group.id, { name: 'Horizon ID', callbackURL: `${idp.url}/login/callback/corp` });
    await insertSignInProvider(idp.db, {
      slug: 'corp', kind: 'oidc', name: 'Corp SSO', client_id: registration.clientId, client_secret: sealClientSecret(undefined, registration.clientSecret),
      scopes: '', settings: JSON.stringify({ issuer: upstream.url }), allow_sign_up: true, allowed_domains: '', trust_mfa: false, position: 0,
    }, now());
    const appOwner = await makeUser(idp.db, { username: 'release-team' });
    const appGroup = await makeGroup(idp.db, appOwner.id, { name: 'Release Engineering', path: 'release' });
    const app = await makeApp(idp.db, appOwner.id, appGroup.id, { name: 'Nightly Builds', callbackURL: 'http://127.0.0.1:9/callback' });

    const context = await chromium.newContext({ viewport: SIZES[0]!.viewport });
    const page = await context.newPage();
    const query = new URLSearchParams({ client_id: app.clientId, redirect_uri: 'http://127.0.0.1:9/callback', scope: 'openid profile', state: 'screenshot' });
    await page.goto(`${idp.url}/login/oauth/authorize?${query}`);
    await page.getByRole('button', { name: 'Continue with Corp SSO' }).waitFor();
    await shoot(page, 'sign-in-providers');

    const grace = await makeUser(upstream.db, { username: 'grace', email: 'grace@corp.example', name: 'Grace Hopper' });
    await page.getByRole('button', { name: 'Continue with Corp SSO' }).click();
    await passUpstream(page, upstream.url, grace);
    await page.waitForURL(`${idp.url}/login/continue/sign-up`);
    await shoot(page, 'sign-up-from-provider');
    await context.close();

    // Someone whose address already has an account here is asked to sign in to it to link.
    await makeUser(idp.db, { username: 'ada', email: 'ada@corp.example', name: 'Ada Lovelace' });
    const ada = await makeUser(upstream.db, { username: 'ada', email: 'ada@corp.example', name: 'Ada Lovelace' });
    const linking = await chromium.newContext({ viewport: SIZES[0]!.viewport });
    const linkPage = await linking.newPage();
    await linkPage.goto(`${idp.url}/login`);
    await linkPage.getByRole('button', { name: 'Continue with Corp SSO' }).click();
    await passUpstream(linkPage, upstream.url, ada);
    await linkPage.waitForURL(`${idp.url}/login/continue/link`);
    await shoot(linkPage, 'link-account');
    await linking.close();
  } finally {
    await upstream.stop();
  }
});
