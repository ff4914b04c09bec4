import { expect } from 'chai';
import type { Browser } from 'playwright-core';
import { setSiteAdmin } from '../../src/services/admin.js';
import { call } from '../helpers/api.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { makeUser, personalToken } from '../helpers/factories.js';
import { launchChromium, signInThroughPage } from './support.js';

describeEachProfile('Admin area in a real browser', function (profile) {
  this.timeout(60_000);

  const idp = useIdp(profile);
  let chromium: Browser;

  before(async () => {
    chromium = await launchChromium();
  });
  after(async () => {
    await chromium?.close();
  });

  it('an administrator disables a user: their next API call gets 401 and their next sign-in is refused with the message', async () => {
    const db = idp.db;
    const admin = await makeUser(db, { name: 'Grace Hopper' });
    await setSiteAdmin(db, { userId: 0, ip: null, admin: true }, admin, true);
    const user = await makeUser(db, { name: 'Mallory Example' });
    const token = await personalToken(idp.db, user.id);
    expect((await call(idp, '/apis/v2/user', { token })).status).to.equal(200);

    // The user is signed in in a browser of their own.
    const theirs = await chromium.newContext();
    const userPage = await theirs.newPage();
    await signInThroughPage(userPage, idp.url, user);

    // Admin → Users → search → the user → Disable… → confirm.
    const mine = await chromium.newContext();
    const page = await mine.newPage();
    await signInThroughPage(page, idp.url, admin);
    await page.getByRole('link', { name: 'Admin', exact: true }).click();
    await page.getByLabel('Search users').fill(user.username);
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByRole('link', { name: user.username, exact: true }).click();
    await page.getByRole('link', { name: 'Disable…' }).click();
    await page.getByRole('button', { name: 'Disable account' }).click();
    expect(await page.getByTestId('notice').textContent()).to.contain('Account disabled');
    expect(await page.getByTestId('badge-disabled').isVisible()).to.equal(true);

    // Their next API call: 401 invalid_token.
    const api = await call(idp, '/apis/v2/user', { token });
    expect(api.status).to.equal(401);
    expect(api.body.error).to.equal('invalid_token');

    // Their browser is signed out, and signing in again is refused with the message.
    await userPage.goto(`${idp.url}/groups`);
    expect(new URL(userPage.url()).pathname).to.equal('/login');
    await userPage.getByLabel('Username or email').fill(user.username);
    await userPage.getByLabel('Password').fill(user.password);
    await userPage.getByRole('button', { name: 'Sign in', exact: true }).click();
    expect(await userPage.getByRole('alert').textContent()).to.equal('This account is disabled. Contact the site administrator.');
    expect(new URL(userPage.url()).pathname).to.equal('/login');

    // The admin audit log names who did it.
    await page.getByRole('link', { name: 'Audit log' }).click();
    const row = page.getByTestId('audit-row').first();
    expect(await row.textContent()).to.contain('Account disabled').and.to.contain(admin.username).and.to.contain(user.username);

    await theirs.close();
    await mine.close();
  });
});
