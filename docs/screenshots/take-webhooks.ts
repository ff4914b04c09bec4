/**
 * Takes the docs' screenshots of a group's Settings → Webhooks: the list of webhooks, Add
 * webhook with its fresh secret, and a webhook's page with Recent deliveries (one opened on its request and response), on a desktop
 * and on a 390 px phone, from a real server on a throwaway SQLite database that delivers to a
 * receiver on loopback (WEBHOOKS_ALLOW_PRIVATE), in the system's Chromium. Run from the
 * repository root:
 *
 *   npx tsx docs/screenshots/take-webhooks.ts
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { changeRole, addMember } from '../../src/services/groups.js';
import { createWebhook, deliveriesOf, redeliver } from '../../src/services/webhooks/manage.js';
import { signInThroughPage } from '../../test/e2e/support.js';
import { listen, waitFor } from '../../test/helpers/app.js';
import { groupAccess, makeApp, makeGroup, makeUser } from '../../test/helpers/factories.js';
import { takeScreenshots } from './session.js';

const OUT = fileURLToPath(new URL('.', import.meta.url));
const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1200, height: 800 };

takeScreenshots(async (idp, chromium) => {
  const written: string[] = [];
  const db = idp.idp.db;
  // The receivers: the team's chat bridge answers 200, the billing service is down (503).
  const receiver = await listen((req, res) => {
    req.resume().on('end', () => {
      if (req.url?.startsWith('/billing')) res.writeHead(503, { 'content-type': 'text/plain' }).end('Service Unavailable: maintenance until 10:00 UTC');
      else res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
  });
  try {
    const ada = await makeUser(db, { username: 'ada', email: 'ada@example.test', name: 'Ada Lovelace' });
    await db('users').update({ email_verified_at: new Date().toISOString() });
    const group = await makeGroup(db, ada.id, { name: 'Analytical Engines', path: 'engines' });
    const access = await groupAccess(db, ada.id, group.id);
    const deps = { db, cipher: undefined, allowPrivate: true };
    const chat = await createWebhook(deps, access, {
      url: `${receiver.url}/chat/horizon`,
      secret: 'c6f1e0a4b7d24c39a8e5f2b1d0c9e8a7',
      events: ['member.added', 'member.removed', 'member.role_changed', 'application.created'],
    });
    await createWebhook(deps, access, { url: `${receiver.url}/billing/seats`, secret: 'b1e2d3c4a5f60718293a4b5c6d7e8f90', events: ['member.added', 'member.removed'] });
    await createWebhook(deps, access, { url: 'https://audit-archive.example.test/horizon', secret: 'f0e1d2c3b4a5968778695a4b3c2d1e0f', events: ['member.added', 'member.removed', 'member.role_changed', 'application.created', 'application.updated', 'application.deleted', 'client_secret.created', 'client_secret.revoked', 'group.updated', 'group.deleted', 'credentials.revoked'], active: false });
    // Things happen in the group: two members join, one becomes a maintainer, an application is registered.
    for (const [username, name] of [['charles', 'Charles Babbage'], ['mary', 'Mary Somerville']] as const) {
      await makeUser(db, { username, email: `${username}@example.test`, name });
      await addMember(db, access, { user: username, role: 'member' });
    }
    const charles = (await db('users').where({ username: 'charles' }).first()) as { id: number };
    await changeRole(db, access, charles.id, 'maintainer');
    await makeApp(db, ada.id, group.id, { name: 'Loom Scheduler', callbackURL: 'http://127.0.0.1:9999/callback' });
    const settled = async () => (await deliveriesOf(db, access, chat.id)).filter((d) => d.state === 'delivered').length;
    await waitFor(async () => (await settled()) === 4, () => 'the chat webhook\'s deliveries did not arrive');
    // The first one sent again, as its Redeliver button does.
    const [oldest] = (await deliveriesOf(db, access, chat.id)).slice(-1);
    await redeliver(db, access, chat.id, oldest!.id);
    await waitFor(async () => (await settled()) === 5, () => 'the redelivery did not arrive');
    await waitFor(async () => Number((await db('webhook_deliveries').where({ state: 'pending' }).where('attempts', '>', 0).count({ n: '*' }).first())?.n) >= 2, () => 'the billing deliveries were not tried');

    type Options = { viewport: { width: number; height: number }; open?: boolean };
    const shoot = async (file: string, options: Options, path: string) => {
      const context = await chromium.newContext({ viewport: options.viewport, deviceScaleFactor: 1 });
      try {
        const page = await context.newPage();
        await signInThroughPage(page, idp.url, ada);
        await page.goto(`${idp.url}${path}`);
        await page.waitForLoadState('networkidle');
        // The oldest delivery (the redelivery's original) opened on its request and response.
        if (options.open) await page.locator('tr.delivery-details details').last().evaluate((details) => details.setAttribute('open', ''));
        await page.screenshot({ path: join(OUT, file), fullPage: true });
        written.push(file);
      } finally {
        await context.close();
      }
    };
    const hookPage = `/groups/engines/settings/webhooks/${chat.id}`;
    await shoot('webhooks-desktop.png', { viewport: DESKTOP }, '/groups/engines/settings/webhooks');
    await shoot('webhooks-phone.png', { viewport: PHONE }, '/groups/engines/settings/webhooks');
    await shoot('new-webhook.png', { viewport: DESKTOP }, '/groups/engines/settings/webhooks/new');
    await shoot('webhook-deliveries-desktop.png', { viewport: DESKTOP, open: true }, hookPage);
    await shoot('webhook-deliveries-phone.png', { viewport: PHONE, open: true }, hookPage);
  } finally {
    await receiver.close();
  }
  console.log(`wrote ${written.join(', ')} to ${OUT}`);
}, { WEBHOOKS_ALLOW_PRIVATE: 'true', WEBHOOKS_POLL_MS: '50' });
