import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { addMember } from '../../src/services/groups.js';
import { describeEachProfile, listen, useHooks, useIdp, waitFor } from '../helpers/app.js';
import { groupAccess, makeGroup, makeUser } from '../helpers/factories.js';
import { launchChromium, signInThroughPage } from './support.js';

const PHONE = { width: 390, height: 844 };

describeEachProfile('Webhooks in a real browser', function (profile) {
  this.timeout(60_000);
  // A receiver whose answer is one long unbroken line, as an error page of a proxy can be.
  const receiver = useHooks(
    () => listen((req, res) => req.resume().on('end', () => res.writeHead(502, { 'content-type': 'text/plain' }).end(`upstream-${'x'.repeat(400)}`))),
    (server) => server.close(),
  );
  const idp = useIdp(profile, { WEBHOOKS_ALLOW_PRIVATE: 'true', WEBHOOKS_POLL_MS: '50', WEBHOOKS_RETRY_MS: '60000' });
  let chromium: Browser;
  let context: BrowserContext;
  let page: Page;

  before(async () => {
    chromium = await launchChromium();
  });
  afterEach(() => context?.close());
  after(() => chromium?.close());

  async function open(viewport: { width: number; height: number }) {
    context = await chromium.newContext({ viewport, deviceScaleFactor: 1 });
    page = await context.newPage();
    return page;
  }
  const documentWidth = () => page.evaluate(() => document.documentElement.scrollWidth);

  /** Adds a webhook through Add webhook by its labels and buttons; ends on the webhook's page. */
  async function addThroughPage(group: { path: string }, url: string) {
    await page.goto(`${idp.url}/groups/${group.path}/settings/webhooks`);
    await page.getByRole('link', { name: 'Add webhook' }).click();
    await page.getByLabel('Payload URL').fill(url);
    await Promise.all([page.waitForURL(/\/webhooks\/\d+\?notice=created$/), page.getByRole('button', { name: 'Add webhook' }).click()]);
  }

  it('adds a webhook through its page, and a delivery opens on its request and response', async () => {
    const owner = await makeUser(idp.db);
    const group = await makeGroup(idp.db, owner.id);
    await open({ width: 1200, height: 800 });
    await signInThroughPage(page, idp.url, owner);
    await addThroughPage(group, `${receiver.url}/hook`);
    expect(await page.getByTestId('notice').textContent()).to.include('Webhook added.');
    const member = await makeUser(idp.db);
    await addMember(idp.db, await groupAccess(idp.db, owner.id, group.id), { user: member.username, role: 'member' });
    await waitFor(async () => {
      await page.reload();
      return (await page.getByTestId('attempts').first().textContent().catch(() => '0'))?.trim() === '1';
    }, () => 'no attempt shown');
    expect(await page.getByTestId('request-body').isVisible()).to.equal(false);
    await page.getByText('Request and response').click();
    expect(await page.getByTestId('request-body').textContent()).to.include(`"username": "${member.username}"`);
    expect(await page.getByTestId('response-body').textContent()).to.match(/^upstream-x+$/);
  });

  it('at 390 px the Webhooks list and a webhook\'s page with a delivery opened are no wider than the phone', async () => {
    const owner = await makeUser(idp.db);
    const group = await makeGroup(idp.db, owner.id);
    await open(PHONE);
    await signInThroughPage(page, idp.url, owner);
    await addThroughPage(group, `${receiver.url}/${'a-very-long-unbroken-path-'.repeat(6)}`);
    const hook = page.url().replace(/\?.*$/, '');
    await addMember(idp.db, await groupAccess(idp.db, owner.id, group.id), { user: (await makeUser(idp.db)).username, role: 'member' });
    await waitFor(async () => {
      await page.reload();
      return (await page.getByTestId('attempts').first().textContent().catch(() => '0'))?.trim() === '1';
    }, () => 'no attempt shown');
    await page.getByText('Request and response').click();
    expect(await documentWidth(), 'the webhook\'s page is no wider than the phone').to.be.at.most(PHONE.width);
    // Recent deliveries may scroll sideways on a narrow desktop; on a phone its rows are lists that fit.
    const deliveries = page.locator('.table-scroll');
    expect(await deliveries.evaluate((table) => table.scrollWidth - table.clientWidth), 'Recent deliveries scrolls sideways').to.equal(0);
    await page.goto(`${idp.url}/groups/${group.path}/settings/webhooks`);
    expect(await documentWidth(), 'the Webhooks page is no wider than the phone').to.be.at.most(PHONE.width);
    await page.goto(`${hook}/delete`);
    expect(await documentWidth(), 'the delete page is no wider than the phone').to.be.at.most(PHONE.width);
  });
});
