import { expect } from 'chai';
import type { Browser } from 'playwright-core';
import { describeEachProfile, listen, useIdp } from '../helpers/app.js';
import { makeClient, makeUser, PASSWORD, type Client } from '../helpers/factories.js';
import { authorizeUrl } from '../helpers/oauth.js';
import { useMailServer } from '../helpers/smtp.js';
import { finishSignUpFromMail, launchChromium } from './support.js';

/**
 * A person who arrives from an application and has no account yet: the flow's sign-in page names
 * the application, "Create an account" keeps the flow, and after sign-up (finished by the mailed
 * link) the consent page (which
 * says where they will be sent) leads to the application's callback. "Not you?" signs out and
 * asks the same request again.
 */
describeEachProfile('The authorization flow in a real browser keeps its place', function (profile) {
  this.timeout(60_000);
  const smtp = useMailServer();
  const idp = useIdp(profile, () => ({ SMTP_URL: smtp.url }));
  let chromium: Browser;
  let callbackServer: Awaited<ReturnType<typeof listen>>;
  let client: Client;

  before(async () => {
    chromium = await launchChromium();
    // The application's callback: a page that says it got the code.
    callbackServer = await listen((_req, res) => {
      res.setHeader('content-type', 'text/html');
      res.end('<h1>callback reached</h1>');
    });
    client = await makeClient(idp.db, { name: 'Nightly Builds', redirectUri: `${callbackServer.url}/callback` });
  });
  after(async () => {
    await chromium?.close();
    await callbackServer?.close();
  });

  it('signs up from the flow, lands on its consent naming where it goes, and finishes at the callback', async () => {
    const context = await chromium.newContext({ viewport: { width: 1200, height: 900 } });
    try {
      const page = await context.newPage();
      await page.goto(authorizeUrl(idp.url, { ...client, scope: 'groups:read-only', state: 'browser-state' }));
      expect(await page.getByTestId('flow-app').textContent()).to.include('Nightly Builds').and.to.include(client.group.name);

      await page.getByRole('link', { name: 'Create an account' }).click();
      await page.waitForURL(/\/signup\?return_to=/);
      const username = `browser-${Date.now().toString(36)}`;
      await page.getByLabel('Username').fill(username);
      await page.getByLabel('Email').fill(`${username}@example.test`);
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign up' }).click();
      await finishSignUpFromMail(page, smtp, idp.url, `${username}@example.test`, PASSWORD);

      await page.waitForURL(/\/interaction\//);
      expect(await page.getByTestId('app-name').textContent()).to.equal('Nightly Builds');
      expect(await page.getByTestId('sent-to').textContent()).to.equal(`You will be sent to ${callbackServer.url}`);

      await page.getByRole('button', { name: 'Authorize' }).click();
      await page.waitForURL(`${callbackServer.url}/callback?**`);
      expect(await page.locator('h1').textContent()).to.equal('callback reached');
      const query = new URL(page.url()).searchParams;
      expect(query.get('state')).to.equal('browser-state');
      expect(query.get('code')).to.be.a('string');
    } finally {
      await context.close();
    }
  });

  it('Not you? signs out and asks the same request again, for another account', async () => {
    const first = await makeUser(idp.db);
    const second = await makeUser(idp.db);
    const context = await chromium.newContext({ viewport: { width: 390, height: 844 } });
    try {
      const page = await context.newPage();
      await page.goto(authorizeUrl(idp.url, { ...client, scope: 'groups:read-only', state: 'switch-state' }));
      await page.getByLabel('Username or email').fill(first.username);
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      await page.getByTestId('not-you').waitFor();
      expect(await page.locator('main').textContent()).to.include(first.username);

      await page.getByRole('button', { name: 'Not you? Use another account' }).click();
      await page.getByLabel('Username or email').waitFor();
      expect(await page.getByTestId('flow-app').textContent()).to.include('Nightly Builds');
      await page.getByLabel('Username or email').fill(second.username);
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      await page.getByTestId('not-you').waitFor();
      const main = (await page.locator('main').textContent()) ?? '';
      expect(main).to.include(second.username).and.not.to.include(first.username);

      await page.getByRole('button', { name: 'Authorize' }).click();
      await page.waitForURL(`${callbackServer.url}/callback?**`);
      expect(await page.locator('h1').textContent()).to.equal('callback reached');
      const query = new URL(page.url()).searchParams;
      expect(query.get('state')).to.equal('switch-state');
    } finally {
      await context.close();
    }
  });
});
