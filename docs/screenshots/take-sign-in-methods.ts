/**
 * Takes docs/screenshots/sign-in-methods-desktop.png (1200 px wide) and
 * sign-in-methods-phone.png (390 px): Account settings → Sign-in methods of an account with a
 * password and two linked identities (inserted directly), and one more provider to link; and
 * sign-in-methods-no-password-phone.png: an account made by an upstream sign-in, with Set a
 * password. Runs on a throwaway SQLite database with Debian's chromium (session.ts).
 *
 *   npx tsx docs/screenshots/take-sign-in-methods.ts
 */
import { fileURLToPath } from 'node:url';
import type { Browser } from 'playwright-core';
import { insertIdentity } from '../../src/db/identities.js';
import { insertSignInProvider } from '../../src/db/sign-in-providers.js';
import { noPasswordHash } from '../../src/services/passwords.js';
import { createUser } from '../../src/services/users.js';
import { takeScreenshots } from './session.js';

const OUT = (name: string) => fileURLToPath(new URL(`./${name}.png`, import.meta.url));
const PASSWORD = 'correct horse battery';
const METHODS = '/account/settings/sign-in-methods';

/** A page of `chromium` signed in as `username` through the sign-in form, on Sign-in methods. */
async function signedIn(chromium: Browser, url: string, username: string, viewport: { width: number; height: number }) {
  const page = await chromium.newPage({ viewport });
  await page.goto(`${url}/login?return_to=${encodeURIComponent(METHODS)}`);
  await page.getByLabel('Username or email').fill(username);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.waitForURL(`${url}${METHODS}`);
  return page;
}

takeScreenshots(async (idp, chromium) => {
  const user = await createUser(idp.db, { username: 'ada', email: 'ada@example.com', name: 'Ada Lovelace', password: PASSWORD }, { emailVerified: true });
  const at = new Date().toISOString();
  const provider = (slug: string, kind: string, name: string, position: number) =>
    insertSignInProvider(idp.db, { slug, kind, name, client_id: 'horizon', client_secret: 'not shown', scopes: '', settings: '{}', allow_sign_up: false, allowed_domains: '', trust_mfa: false, position }, at);
  const github = (await provider('github', 'github', 'GitHub', 1))!;
  const corp = (await provider('corp', 'oidc', 'Analytical Engines SSO', 2))!;
  await provider('google', 'google', 'Google', 3);
  await insertIdentity(idp.db, { userId: user.id, providerId: github.id, subject: '583231', username: 'ada-lovelace', email: 'ada@example.com', at: '2026-10-02T09:14:00.000Z' });
  await insertIdentity(idp.db, { userId: user.id, providerId: corp.id, subject: 'e3b0c442', username: 'ada@engines.example', email: 'ada@example.com', at: '2026-11-20T16:40:00.000Z' });
  await idp.db('user_identities').where({ provider_id: github.id }).update({ last_used_at: '2026-11-26T08:03:00.000Z' });

  for (const [name, width] of [['sign-in-methods-desktop', 1200], ['sign-in-methods-phone', 390]] as const) {
    const page = await signedIn(chromium, idp.url, 'ada', { width, height: 900 });
    await page.screenshot({ path: OUT(name), fullPage: true });
    console.log(`wrote ${OUT(name)}`);
    await page.close();
  }
  // An account an upstream sign-in made: signed in, then left without a password.
  const grace = await createUser(idp.db, { username: 'grace', email: 'grace@example.com', name: 'Grace Hopper', password: PASSWORD }, { emailVerified: true });
  await insertIdentity(idp.db, { userId: grace.id, providerId: github.id, subject: '1906', username: 'grace-hopper', email: 'grace@example.com', at: '2026-11-27T10:00:00.000Z' });
  const page = await signedIn(chromium, idp.url, 'grace', { width: 390, height: 844 });
  await idp.db('users').where({ id: grace.id }).update({ password_hash: noPasswordHash() });
  await page.reload();
  await page.screenshot({ path: OUT('sign-in-methods-no-password-phone'), fullPage: true });
  console.log(`wrote ${OUT('sign-in-methods-no-password-phone')}`);
});
