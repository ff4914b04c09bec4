/**
 * Takes the docs' screenshots of Admin → Sign-in providers (the list, and a provider's page
 * with its callback URL), at 1200 px and as a 390 px phone, from a real server on a throwaway
 * SQLite database, in the system's Chromium. Run from the repository root:
 *
 *   npx tsx docs/screenshots/take-admin-providers.ts
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { insertIdentity } from '../../src/db/identities.js';
import { setSiteAdmin } from '../../src/services/admin.js';
import { kindOf, upstreamKinds } from '../../src/services/federation/kinds.js';
import { createProvider, setProviderDisabled } from '../../src/services/federation/manage.js';
import { signInThroughPage } from '../../test/e2e/support.js';
import { makeUser } from '../../test/helpers/factories.js';
import { TEST_KIND } from '../../test/federation/admin-test-kind.js';
import { CLI, DESKTOP_AND_PHONE, takeScreenshots } from './session.js';

const OUT = fileURLToPath(new URL('.', import.meta.url));

// A build without the OpenID Connect kind yet shows the same pages with a stand-in of its name and issuer setting.
if (!kindOf('oidc')) upstreamKinds.oidc = { ...TEST_KIND, kind: 'oidc', label: 'OpenID Connect', settings: TEST_KIND.settings.slice(0, 1) };

takeScreenshots(async (idp, chromium) => {
  const db = idp.idp.db;
  const ada = await makeUser(db, { username: 'ada', email: 'ada@example.test', name: 'Ada Lovelace' });
  await db('users').update({ email_verified_at: new Date().toISOString() });
  await setSiteAdmin(db, CLI, ada, true);
  const manage = { db, cipher: undefined };
  const corp = await createProvider(manage, CLI, {
    kind: 'oidc', slug: 'corp', name: 'Corp SSO', client_id: 'horizon-id', client_secret: 'not-a-real-secret',
    settings: { issuer: 'https://sso.corp.example' }, allow_sign_up: true, allowed_domains: 'corp.example', trust_mfa: true,
  });
  const old = await createProvider(manage, CLI, {
    kind: 'oidc', slug: 'legacy', name: 'Legacy directory', client_id: 'idp-legacy', client_secret: 'not-a-real-secret',
    settings: { issuer: 'https://legacy.corp.example' },
  });
  await setProviderDisabled(db, CLI, old, true);
  for (const [i, username] of ['grace', 'alan', 'katherine'].entries()) {
    const user = await makeUser(db, { username, email: `${username}@corp.example` });
    await insertIdentity(db, { userId: user.id, providerId: corp.id, subject: `corp-${i}`, username, email: `${username}@corp.example`, at: new Date().toISOString() });
  }

  const files: string[] = [];
  for (const { suffix, viewport } of DESKTOP_AND_PHONE) {
    const context = await chromium.newContext({ viewport, deviceScaleFactor: 1 });
    try {
      const page = await context.newPage();
      await signInThroughPage(page, idp.url, ada);
      await page.goto(`${idp.url}/admin/providers`);
      await page.getByTestId('provider-row').first().waitFor();
      await page.screenshot({ path: join(OUT, `admin-providers${suffix}.png`), fullPage: true });
      await page.getByRole('link', { name: 'Corp SSO' }).click();
      await page.getByTestId('callback-url').waitFor();
      await page.screenshot({ path: join(OUT, `admin-provider${suffix}.png`), fullPage: true });
      files.push(`admin-providers${suffix}.png`, `admin-provider${suffix}.png`);
    } finally {
      await context.close();
    }
  }
  console.log(`wrote ${files.join(', ')} to ${OUT}`);
});
