/**
 * Takes docs/screenshots/example-home.png: the example third-party server's home page, listing
 * the groups of a person who signed in through Horizon ID. Runs everything on a throwaway SQLite
 * database and random loopback ports, with Debian's chromium.
 *
 *   npx tsx scripts/screenshot-example.ts
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { createExampleApp } from '../examples/third-party-server/server.js';
import { createIdp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { createApplication } from '../src/services/apps.js';
import { accessGroup, createGroup } from '../src/services/groups.js';
import { createUser } from '../src/services/users.js';

const OUT = fileURLToPath(new URL('../docs/screenshots/example-home.png', import.meta.url));

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
const exampleServer = createServer();
const exampleUrl = await listen(exampleServer);

const user = await createUser(idp.db, { username: 'ada', email: 'ada@example.com', name: 'Ada Lovelace', password: 'correct horse battery' }, { emailVerified: true });
const actor = { userId: user.id, ip: null };
const groups = [
  { name: 'Analytical Engines', path: 'engines', description: 'Mill, store and the cards that drive them', visibilityLevel: 'internal' as const },
  { name: 'Difference Engine No. 2', path: 'difference-engine', description: 'Tables of polynomials, printed', visibilityLevel: 'private' as const },
  { name: 'Notes & Translations', path: 'notes', description: 'Note G and friends', visibilityLevel: 'public' as const },
];
const groupIds: number[] = [];
for (const group of groups) groupIds.push((await createGroup(idp.db, actor, group)).id);
const { app, secret } = await createApplication(idp.db, await accessGroup(idp.db, actor, { id: groupIds[0]! }, 'manage-apps'), {
  name: 'Example third-party server',
  homepageURL: `${exampleUrl}/`,
  description: 'Lists your groups',
  callbackURL: `${exampleUrl}/callback`,
});
const example = await createExampleApp({ issuer: idpUrl, clientId: app.client_id, clientSecret: secret!.secret, redirectUri: `${exampleUrl}/callback` });
exampleServer.on('request', example.callback());

const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
try {
  const page = await browser.newPage({ viewport: { width: 900, height: 700 } });
  await page.goto(`${exampleUrl}/`);
  await page.getByLabel('Username or email').fill('ada');
  await page.getByLabel('Password').fill('correct horse battery');
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByRole('button', { name: 'Authorize' }).click();
  await page.waitForURL(`${exampleUrl}/`);
  await page.screenshot({ path: OUT });
  console.log(`wrote ${OUT}`);
} finally {
  await browser.close();
  for (const server of [idpServer, exampleServer]) {
    server.closeAllConnections();
    server.close();
  }
  await idp.close();
  rmSync(dir, { recursive: true, force: true });
}
