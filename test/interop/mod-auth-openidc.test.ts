import { existsSync } from 'node:fs';
import { expect } from 'chai';
import type { Browser } from 'playwright-core';
import { updateApplication } from '../../src/services/apps.js';
import { APACHE, freePort, MOD_AUTH_OPENIDC, startApache, type RunningApache } from '../helpers/apache.js';
import { profiles, startIdp, type RunningIdp } from '../helpers/app.js';
import { appAccess, makeApp, makeGroup, makeUser } from '../helpers/factories.js';
import { CHROMIUM, launchChromium } from '../e2e/support.js';

/**
 * mod_auth_openidc (Debian's libapache2-mod-auth-openidc) in a real Apache, driven by Chromium:
 * a page behind sign-in shows the user, and mod_auth_openidc's standard logout goes through the
 * provider's RP-initiated logout and back to the application's registered sign-out URL.
 */
for (const profile of profiles()) {
  describe(`mod_auth_openidc in Apache against the provider (${profile})`, function () {
    this.timeout(60_000);
    let server: RunningIdp;
    let apache: RunningApache;
    let browser: Browser;
    let user: Awaited<ReturnType<typeof makeUser>>;

    before(async () => {
      for (const [file, pkg] of [[APACHE, 'apache2'], [MOD_AUTH_OPENIDC, 'libapache2-mod-auth-openidc'], [CHROMIUM, 'chromium']] as const) {
        if (!existsSync(file)) throw new Error(`${file} is missing: install Debian's ${pkg} (apt-get install ${pkg}), as .ci/run does`);
      }
      server = await startIdp(profile);
      user = await makeUser(server.idp.db, { name: 'Grace Hopper' });
      const group = await makeGroup(server.idp.db, user.id);
      const port = await freePort();
      const placeholder = `http://127.0.0.1:${port}`;
      const app = await makeApp(server.idp.db, user.id, group.id, { callbackURL: `${placeholder}/protected/redirect_uri` });
      await updateApplication(server.idp.db, await appAccess(server.idp.db, user.id, app.clientId), { signOutRedirectURLs: [`${placeholder}/bye.html`] });
      apache = await startApache(port, { issuer: server.url, clientId: app.clientId, clientSecret: app.clientSecret });
      browser = await launchChromium();
    });
    after(async () => {
      await browser?.close();
      await apache?.stop();
      await server?.stop();
    });

    it('signs in through the provider, shows the user on the protected page, then signs out back to the registered URL', async () => {
      const page = await browser.newPage();
      try {
        await page.goto(apache.protectedUrl);
        expect(new URL(page.url()).origin, apache.errorLog()).to.equal(server.url);
        await page.getByLabel('Username or email').fill(user.username);
        await page.getByLabel('Password').fill(user.password);
        await page.getByRole('button', { name: 'Sign in' }).click();
        await page.getByRole('button', { name: 'Authorize' }).click();
        await page.waitForURL(apache.protectedUrl);
        expect(await page.locator('#user').textContent(), apache.errorLog()).to.equal(user.username);
        expect(await page.locator('#name').textContent()).to.equal('Grace Hopper');
        expect(await page.locator('#email').textContent()).to.equal(user.email);

        await page.goto(apache.logoutUrl);
        expect(new URL(page.url()).origin, apache.errorLog()).to.equal(server.url);
        await page.getByRole('heading', { name: 'Sign out of Horizon ID?' }).waitFor();
        expect(await page.locator('header .who').textContent()).to.equal(user.username);
        await page.getByRole('button', { name: 'Yes, sign me out' }).click();
        await page.waitForURL(apache.signedOutUrl);
        expect(await page.locator('#bye').textContent()).to.equal('You have signed out.');

        // Both sessions are gone: the protected page sends the browser to sign in again.
        await page.goto(apache.protectedUrl);
        expect(new URL(page.url()).origin).to.equal(server.url);
        await page.getByLabel('Password').waitFor();
      } finally {
        await page.close();
      }
    });
  });
}
