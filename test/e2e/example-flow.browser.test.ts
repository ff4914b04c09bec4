import { existsSync } from 'node:fs';
import { expect } from 'chai';
import type { Browser, Page, Response as PageResponse } from 'playwright-core';
import { createExampleApp } from '../../examples/third-party-server/server.js';
import { describeEachProfile, listen, useIdp } from '../helpers/app.js';
import { makeUser } from '../helpers/factories.js';
import { useMailServer } from '../helpers/smtp.js';
import { CHROMIUM, finishSignUpFromMail, launchChromium } from './support.js';

const PASSWORD = 'correct horse battery staple';

/** The first response of the redirect chain that ended in `response`. */
async function firstOfChain(response: PageResponse): Promise<PageResponse> {
  let request = response.request();
  while (request.redirectedFrom()) request = request.redirectedFrom()!;
  return (await request.response())!;
}

/**
 * The whole story in a real browser: a person signs up, makes a group, registers the example
 * third-party server as its application by the click path, signs in to the example through
 * Horizon ID, sees their groups there, revokes the application and is sent back to authorize;
 * another person cancels at the consent page and the example says access_denied.
 */
describeEachProfile('a browser through the example third-party server', function (profile) {
  this.timeout(90_000);
  const smtp = useMailServer();
  const idp = useIdp(profile, () => ({ SMTP_URL: smtp.url }));
  let browser: Browser;
  let example: Awaited<ReturnType<typeof listen>>;

  before(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install chromium), as .ci/run does`);
    browser = await launchChromium();
    // The example listens first: its callback URL (with the port) is needed to register it.
    example = await listen();
  });
  after(async () => {
    await browser?.close();
    await example?.close();
  });

  async function signIn(page: Page, login: string): Promise<void> {
    await page.getByLabel('Username or email').fill(login);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  }

  it('registers the example by the click path, signs in through it, lists groups there, and revokes it', async () => {
    const page = await browser.newPage();

    // Sign up and make a group.
    await page.goto(`${idp.url}/signup`);
    await page.getByLabel('Username', { exact: true }).fill('ada');
    await page.getByLabel('Email').fill('ada@example.test');
    await page.getByLabel('Name', { exact: true }).fill('Ada Lovelace');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign up' }).click();
    await finishSignUpFromMail(page, smtp, idp.url, 'ada@example.test', PASSWORD);
    await page.getByRole('link', { name: 'New group' }).click();
    await page.getByLabel('Name', { exact: true }).fill('Analytical Engines <&>');
    await page.getByLabel('Path').fill('engines');
    await page.getByLabel('Description').fill('Where the engines are');
    await page.getByRole('radio', { name: 'Internal' }).check();
    await page.getByRole('button', { name: 'Create group' }).click();
    expect(await page.getByTestId('group-name').textContent()).to.equal('Analytical Engines <&>');

    // Register the example: group → Settings → Developer → New application → … → Create.
    await page.getByRole('link', { name: 'Settings', exact: true }).click();
    await page.getByRole('link', { name: 'Developer', exact: true }).click();
    await page.getByRole('link', { name: 'New application' }).click();
    await page.getByLabel('Application name').fill('Example third-party server');
    await page.getByLabel('Homepage URL').fill(`${example.url}/`);
    await page.getByLabel('Description').fill('Lists your groups');
    await page.getByLabel('Authorization callback URL').fill(`${example.url}/callback`);
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    const clientId = (await page.getByTestId('client-id').textContent())!.trim();
    const clientSecret = (await page.getByTestId('client-secret').textContent())!.trim();
    expect(clientSecret).to.match(/^hs_/);

    const exampleApp = await createExampleApp({ issuer: idp.url, clientId, clientSecret, redirectUri: `${example.url}/callback` });
    example.server.on('request', exampleApp.callback());

    // Signed out at Horizon ID, open the example: sign-in, consent, and back to the example's home.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.goto(`${example.url}/`);
    expect(new URL(page.url()).origin).to.equal(idp.url);
    await signIn(page, 'ada');
    expect(await page.getByTestId('app-name').textContent()).to.equal('Example third-party server');
    await page.getByRole('button', { name: 'Authorize' }).click();
    await page.waitForURL(`${example.url}/`);
    expect(await page.getByTestId('group').allTextContents()).to.have.length(1);
    expect(await page.getByTestId('group').textContent()).to.include('Analytical Engines <&>');
    expect(await page.locator('body').textContent()).to.include('Ada Lovelace');

    // Revoke it in Account settings → Authorized applications.
    await page.goto(`${idp.url}/groups`);
    await page.getByRole('link', { name: 'Account settings' }).click();
    await page.getByRole('link', { name: 'Authorized applications' }).click();
    const row = page.getByTestId('application-row').filter({ hasText: 'Example third-party server' });
    page.once('dialog', (dialog) => void dialog.accept());
    await row.getByRole('button', { name: 'Revoke' }).click();
    await page.getByTestId('no-applications').waitFor();

    // The example's token is now refused by the API: a 302 to authorize, and the consent page again.
    const response = (await page.goto(`${example.url}/`))!;
    const first = await firstOfChain(response);
    expect(first.url()).to.equal(`${example.url}/`);
    expect(first.status()).to.equal(302);
    expect(first.headers().location).to.match(new RegExp(`^${idp.url}/login/oauth/authorize\\?`));
    expect(await page.getByRole('button', { name: 'Authorize' }).isVisible()).to.equal(true);
    await page.close();
  });

  it('shows access_denied at the example when a second person clicks Cancel', async () => {
    const other = await makeUser(idp.db, { username: 'bob', password: PASSWORD });
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${example.url}/`);
    await signIn(page, other.username);
    const [callback] = await Promise.all([
      page.waitForResponse((r) => r.url().startsWith(`${example.url}/callback`)),
      page.getByRole('button', { name: 'Cancel' }).click(),
    ]);
    expect(callback.status()).to.equal(403);
    expect(await page.getByTestId('error').textContent()).to.equal('access_denied');
    await context.close();
  });
});
