import { expect } from 'chai';
import type { Browser } from 'playwright-core';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { makeUser } from '../helpers/factories.js';
import { linkIn, useMailServer } from '../helpers/smtp.js';
import { launchChromium } from './support.js';

const NEW_PASSWORD = 'a brand new passphrase';

describeEachProfile('Forgot password in a real browser', function (profile) {
  this.timeout(60_000);

  const smtp = useMailServer();
  const idp = useIdp(profile, () => ({ SMTP_URL: smtp.url }));
  let chromium: Browser;

  before(async () => {
    chromium = await launchChromium();
  });
  after(async () => {
    await chromium?.close();
  });

  it('from the sign-in page to the mailed link, a new password, and signing in with it', async () => {
    const user = await makeUser(idp.db);
    const context = await chromium.newContext();
    try {
      const page = await context.newPage();
      await page.goto(`${idp.url}/login`);
      await page.getByRole('link', { name: 'Forgot password?' }).click();
      await page.getByLabel('Email').fill(user.email);
      await page.getByRole('button', { name: 'Send the link' }).click();
      await page.waitForURL(`${idp.url}/forgot-password/sent`);
      expect(await page.getByTestId('notice').textContent()).to.include('If an account uses that address');

      const link = linkIn(await smtp.next(user.email), idp.url);
      const opened = await page.goto(link.toString());
      expect(opened?.headers()['referrer-policy']).to.equal('no-referrer');
      await page.getByLabel('New password', { exact: true }).fill(NEW_PASSWORD);
      await page.getByLabel('New password again').fill('not the same');
      await page.getByRole('button', { name: 'Set the new password' }).click();
      expect(await page.getByRole('alert').textContent()).to.include('do not match');

      await page.getByLabel('New password', { exact: true }).fill(NEW_PASSWORD);
      await page.getByLabel('New password again').fill(NEW_PASSWORD);
      await page.getByRole('button', { name: 'Set the new password' }).click();
      await page.waitForURL(`${idp.url}/reset-password/done`);
      // Post/Redirect/Get: the address bar no longer holds the token.
      expect(page.url()).not.to.include('token');

      await page.getByRole('link', { name: 'Sign in' }).last().click();
      await page.getByLabel('Username or email').fill(user.username);
      await page.getByLabel('Password').fill(NEW_PASSWORD);
      await Promise.all([page.waitForURL(`${idp.url}/groups`), page.getByRole('button', { name: 'Sign in', exact: true }).click()]);
    } finally {
      await context.close();
    }
  });
});
