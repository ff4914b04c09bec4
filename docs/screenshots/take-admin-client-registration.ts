/**
 * Takes the docs' screenshots of Admin → Client registration (both ways on, with the group
 * such clients belong to), and of a group's applications with one that registered itself (the
 * list and its page), at 1200 px and as a 390 px phone, from a real server on a throwaway SQLite database, in the system's
 * Chromium. Run from the repository root:
 *
 *   npx tsx docs/screenshots/take-admin-client-registration.ts
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setSiteAdmin } from '../../src/services/admin.js';
import { setClientRegistration } from '../../src/services/client-registration/settings.js';
import { signInThroughPage } from '../../test/e2e/support.js';
import { makeApp, makeGroup, makeUser } from '../../test/helpers/factories.js';
import { CLI, DESKTOP_AND_PHONE, takeScreenshots } from './session.js';

const OUT = fileURLToPath(new URL('.', import.meta.url));

takeScreenshots(async (idp, chromium) => {
  const db = idp.idp.db;
  const ada = await makeUser(db, { username: 'ada', email: 'ada@example.test', name: 'Ada Lovelace' });
  await db('users').update({ email_verified_at: new Date().toISOString() });
  await setSiteAdmin(db, CLI, ada, true);
  const group = await makeGroup(db, ada.id, { name: 'AI agents', path: 'ai-agents' });
  await setClientRegistration(db, CLI, { metadataDocuments: true, dynamicRegistration: true, group: group.path });
  const dashboard = await makeApp(db, ada.id, group.id, { name: 'Build dashboard' });
  await db('oauth_apps').where({ client_id: dashboard.clientId }).update({ description: 'Shows the state of every build' });
  const agent = await makeApp(db, ada.id, group.id, { name: 'Research assistant', type: 'public' });
  await db('oauth_apps').where({ client_id: agent.clientId }).update({
    client_id: 'https://assistant.example/oauth/client.json',
    homepage_url: 'https://assistant.example',
    description: 'Answers questions about your projects',
    redirect_uris: JSON.stringify(['http://127.0.0.1/callback', 'https://assistant.example/oauth/callback']),
    registered_by: 'metadata_document',
    registered_from: 'assistant.example',
  });

  const files: string[] = [];
  for (const { suffix, viewport } of DESKTOP_AND_PHONE) {
    const context = await chromium.newContext({ viewport, deviceScaleFactor: 1 });
    try {
      const page = await context.newPage();
      await signInThroughPage(page, idp.url, ada);
      await page.goto(`${idp.url}/admin/client-registration`);
      await page.getByTestId('registration-endpoint').waitFor();
      await page.screenshot({ path: join(OUT, `admin-client-registration${suffix}.png`), fullPage: true });
      await page.goto(`${idp.url}/groups/${group.path}/settings/developer`);
      await page.getByTestId('registered-automatically').waitFor();
      await page.screenshot({ path: join(OUT, `developer-registered${suffix}.png`), fullPage: true });
      await page.getByRole('link', { name: 'Research assistant' }).click();
      await page.getByTestId('registered-how').waitFor();
      await page.screenshot({ path: join(OUT, `application-registered${suffix}.png`), fullPage: true });
      files.push(`admin-client-registration${suffix}.png`, `developer-registered${suffix}.png`, `application-registered${suffix}.png`);
    } finally {
      await context.close();
    }
  }
  console.log(`wrote ${files.join(', ')} to ${OUT}`);
});
