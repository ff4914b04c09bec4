import { expect } from 'chai';
import type { Browser } from 'playwright-core';
import { profiles, startIdp, type RunningIdp } from '../helpers/app.js';
import { makeUser } from '../helpers/factories.js';
import { linkIn, startMailServer, type MailServer } from '../helpers/smtp.js';
import { launchChromium } from './support.js';

const NEW_PASSWORD = 'a brand new passphrase';

for (const profile of profiles()) {
  describe(`Forgot password in a real browser (${profile})`, function () {
    this.timeout(60_000);

    let smtp: MailServer;
    let idp: RunningIdp;
    let chromium: Browser;

    before(async () => {
      smtp = await startMailServer();
      [idp, chromium] = await Promise.all([startIdp(profile, { SMTP_URL: smtp.url }), launchChromium()]);
    });
    after(async () => {
      await chromium?.close();
      await idp?.stop();
      await smtp?.close();
    });

    it('from the sign-in page to the mailed link, a new password, and signing in with it', async () => {
      const user = await makeUser(idp.idp.db);
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
        await Promise.all([page.waitForURL(`${idp.url}/groups`), page.getByRole('button', { name: 'Sign in' }).click()]);
      } finally {
        await context.close();
      }
    });
  });
}
