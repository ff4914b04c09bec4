/**
 * Takes the docs' screenshots of the consent page an MCP client meets: a client known only by its
 * Client ID Metadata Document (so marked as not reviewed, with the document's host) asking for a
 * group's resource and its scopes, on a desktop and a 390 px phone, from a real server on a
 * throwaway SQLite database, in the system's Chromium. The document is served on 127.0.0.1, which
 * CLIENT_METADATA_ALLOW_PRIVATE allows here. Run from the repository root:
 *
 *   npx tsx docs/screenshots/take-mcp-consent.ts
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createResource } from '../../src/services/resources/manage.js';
import { setClientRegistration } from '../../src/services/client-registration/settings.js';
import { groupAccess, makeGroup, makeUser } from '../../test/helpers/factories.js';
import { takeScreenshots } from './session.js';

const OUT = fileURLToPath(new URL('.', import.meta.url));
const CALLBACK = 'http://127.0.0.1:33418/callback';

takeScreenshots(async (idp, chromium) => {
  const db = idp.idp.db;
  const ada = await makeUser(db, { username: 'ada', email: 'ada@example.test', name: 'Ada Lovelace' });
  await db('users').update({ email_verified_at: new Date().toISOString() });
  const owner = await makeUser(db, { username: 'charles' });
  const engines = await makeGroup(db, owner.id, { name: 'Analytical Engines', path: 'engines' });
  const agents = await makeGroup(db, owner.id, { name: 'Agents', path: 'agents' });
  await setClientRegistration(db, { userId: 0, ip: null, admin: true }, { metadataDocuments: true, dynamicRegistration: false, group: agents.path });
  const identifier = 'https://mill.engines.example/mcp';
  await createResource({ db, issuer: idp.url }, await groupAccess(db, owner.id, engines.id), {
    identifier,
    name: 'Mill MCP server',
    scopes: [{ name: 'mill:read', description: 'See the mill\'s jobs and their results' }, { name: 'mill:run', description: 'Start and stop jobs on the mill' }],
  });
  const site = createServer((req, res) => {
    const url = `http://127.0.0.1:${(site.address() as AddressInfo).port}${req.url}`;
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ client_id: url, client_name: 'Notebook Agent', redirect_uris: [CALLBACK] }));
  });
  await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
  const clientId = `http://127.0.0.1:${(site.address() as AddressInfo).port}/oauth/client.json`;
  try {
    for (const [name, viewport] of [['desktop', { width: 1200, height: 800 }], ['phone', { width: 390, height: 844 }]] as const) {
      const context = await chromium.newContext({ viewport, deviceScaleFactor: 1 });
      const page = await context.newPage();
      const query = new URLSearchParams({ client_id: clientId, redirect_uri: CALLBACK, response_type: 'code', scope: 'mill:read mill:run', resource: identifier, state: 's', code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256' });
      await page.goto(`${idp.url}/login/oauth/authorize?${query}`);
      await page.getByLabel('Username or email').fill(ada.username);
      await page.getByLabel('Password').fill(ada.password);
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      await page.getByTestId('not-reviewed').waitFor();
      await page.screenshot({ path: join(OUT, `consent-mcp-${name}.png`), fullPage: true });
      await context.close();
    }
  } finally {
    site.close();
  }
  console.log('wrote consent-mcp-desktop.png, consent-mcp-phone.png');
}, { CLIENT_METADATA_ALLOW_PRIVATE: 'true' });
