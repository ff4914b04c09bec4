/**
 * Takes docs/screenshots/sign-in-methods-desktop.png (1200 px wide) and
 * sign-in-methods-phone.png (390 px): Account settings → Sign-in methods of an account with a
 * password and two linked identities (inserted directly), and one more provider to link; and
 * sign-in-methods-no-password-phone.png: an account made by an upstream sign-in, with Set a
 * password. Runs on
 * a throwaway SQLite database and a random loopback port, with Debian's chromium.
 *
 *   npx tsx docs/screenshots/take-sign-in-methods.ts
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { createIdp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { insertIdentity } from '../../src/db/identities.js';
import { insertSignInProvider } from '../../src/db/sign-in-providers.js';
import { createLogger } from '../../src/log.js';
import { noPasswordHash } from '../../src/services/passwords.js';
import { createUser } from '../../src/services/users.js';

const OUT = (name: string) => fileURLToPath(new URL(`./${name}.png`, import.meta.url));

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const dir = mkdtempSync(join(tmpdir(), 'idp-screenshot-'));
const idpServer = createServer();
const idpUrl = await listen(idpServer);
const config = loadConfig({ ISSUER: idpUrl, DATABASE_URL: `sqlite:${join(dir, 'idp.sqlite3')}`, LOG_LEVEL: 'warn', NODE_ENV: 'test' });
const idp = await createIdp(config, { logger: createLogger(config.logLevel) });
idpServer.on('request', idp.app.callback());

const user = await createUser(idp.db, { username: 'ada', email: 'ada@example.com', name: 'Ada Lovelace', password: 'correct horse battery' }, { emailVerified: true });
const at = new Date().toISOString();
const provider = (slug: string, kind: string, name: string, position: number) =>
  insertSignInProvider(idp.db, { slug, kind, name, client_id: 'horizon', client_secret: 'not shown', scopes: '', settings: '{}', allow_sign_up: false, allowed_domains: '', trust_mfa: false, position }, at);
const github = (await provider('github', 'github', 'GitHub', 1))!;
const corp = (await provider('corp', 'oidc', 'Analytical Engines SSO', 2))!;
await provider('google', 'google', 'Google', 3);
await insertIdentity(idp.db, { userId: user.id, providerId: github.id, subject: '583231', username: 'ada-lovelace', email: 'ada@example.com', at: '2026-10-02T09:14:00.000Z' });
await insertIdentity(idp.db, { userId: user.id, providerId: corp.id, subject: 'e3b0c442', username: 'ada@engines.example', email: 'ada@example.com', at: '2026-11-20T16:40:00.000Z' });
await idp.db('user_identities').where({ provider_id: github.id }).update({ last_used_at: '2026-11-26T08:03:00.000Z' });

const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
try {
  for (const [name, width] of [['sign-in-methods-desktop', 1200], ['sign-in-methods-phone', 390]] as const) {
    const page = await browser.newPage({ viewport: { width, height: 900 } });
    await page.goto(`${idpUrl}/login?return_to=${encodeURIComponent('/account/settings/sign-in-methods')}`);
    await page.getByLabel('Username or email').fill('ada');
    await page.getByLabel('Password').fill('correct horse battery');
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.waitForURL(`${idpUrl}/account/settings/sign-in-methods`);
    await page.screenshot({ path: OUT(name), fullPage: true });
    console.log(`wrote ${OUT(name)}`);
    await page.close();
  }
  // An account an upstream sign-in made: signed in, then left without a password.
  const grace = await createUser(idp.db, { username: 'grace', email: 'grace@example.com', name: 'Grace Hopper', password: 'correct horse battery' }, { emailVerified: true });
  await insertIdentity(idp.db, { userId: grace.id, providerId: github.id, subject: '1906', username: 'grace-hopper', email: 'grace@example.com', at: '2026-11-27T10:00:00.000Z' });
  const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
  await page.goto(`${idpUrl}/login?return_to=${encodeURIComponent('/account/settings/sign-in-methods')}`);
  await page.getByLabel('Username or email').fill('grace');
  await page.getByLabel('Password').fill('correct horse battery');
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.waitForURL(`${idpUrl}/account/settings/sign-in-methods`);
  await idp.db('users').where({ id: grace.id }).update({ password_hash: noPasswordHash() });
  await page.reload();
  await page.screenshot({ path: OUT('sign-in-methods-no-password-phone'), fullPage: true });
  console.log(`wrote ${OUT('sign-in-methods-no-password-phone')}`);
} finally {
  await browser.close();
  idpServer.closeAllConnections();
  idpServer.close();
  await idp.close();
  rmSync(dir, { recursive: true, force: true });
}
