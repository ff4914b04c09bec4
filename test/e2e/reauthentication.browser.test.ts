import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { makeUser, type TestUser } from '../helpers/factories.js';
import { ageSession } from '../helpers/sessions.js';
import { useMailServer } from '../helpers/smtp.js';
import { signInThroughPage, useChromium } from './support.js';

/**
 * Confirm access ("sudo mode") clicked through in Chromium, with the DevTools virtual
 * authenticator for passkeys (the issuer is http://localhost:<port>: WebAuthn wants a host name).
 */
describeEachProfile('Confirm access in a real browser', function (profile) {
  this.timeout(90_000);

  const smtp = useMailServer();
  const idp = useIdp(profile, () => ({ ISSUER: 'http://localhost:{port}', SMTP_URL: smtp.url }));
  const chromium = useChromium();

  async function withAuthenticator(page: Page): Promise<void> {
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('WebAuthn.enable');
    await cdp.send('WebAuthn.addVirtualAuthenticator', {
      options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
    });
  }

  /** The session cookie of `page`'s browser profile, as a copy of it would be. */
  async function sessionCookie(page: Page) {
    const cookie = (await page.context().cookies()).find((c) => c.name === 'idp_session');
    if (!cookie) throw new Error('not signed in');
    return cookie;
  }

  /** Signs in and moves the sign-in `minutes` into the past. */
  async function signedInLongAgo(page: Page, user: TestUser, minutes = 11): Promise<void> {
    await signInThroughPage(page, idp.url, user);
    await ageSession(idp, (await sessionCookie(page)).value, minutes);
  }

  it('a copied session cookie cannot add a passkey: Add leads to Confirm access, which only the password passes', async () => {
    const user = await makeUser(idp.db);
    const owner = await chromium.newPage();
    await signedInLongAgo(owner, user);

    // Another computer with the owner's cookies (the signed session cookie and its signature).
    const thief = await chromium.newPage();
    await withAuthenticator(thief);
    await thief.context().addCookies((await owner.context().cookies()).filter((c) => c.name.startsWith('idp_session')));
    await thief.goto(`${idp.url}/account/settings/passkeys`);
    expect(await thief.locator('.who').textContent()).to.equal(user.username);
    expect(await thief.getByLabel('Passkey name').count()).to.equal(0);
    await thief.getByRole('link', { name: 'Add a passkey' }).click();
    await thief.getByRole('heading', { name: 'Confirm access' }).waitFor();
    expect(await thief.getByTestId('confirm-purpose').textContent()).to.equal('To add a passkey, enter your password again.');
    await thief.getByLabel('Password').fill('a guess');
    await thief.getByRole('button', { name: 'Confirm', exact: true }).click();
    await thief.getByText('The current password is incorrect.').waitFor();
    expect(new URL(thief.url()).pathname).to.equal('/account/confirm-access');

    // The owner, who knows it: back on Passkeys with the form.
    await withAuthenticator(owner);
    await owner.goto(`${idp.url}/account/settings/passkeys`);
    await owner.getByRole('link', { name: 'Add a passkey' }).click();
    await owner.getByLabel('Password').fill(user.password);
    await Promise.all([owner.waitForURL(`${idp.url}/account/settings/passkeys`), owner.getByRole('button', { name: 'Confirm', exact: true }).click()]);
    // Ten minutes pass with the form open: its button is sent to the prompt (no challenge given), then back.
    await ageSession(idp, (await sessionCookie(owner)).value, 11);
    await owner.getByLabel('Passkey name').fill('Laptop');
    await Promise.all([owner.waitForURL(/\/account\/confirm-access/), owner.getByRole('button', { name: 'Add a passkey' }).click()]);
    await owner.getByLabel('Password').fill(user.password);
    await Promise.all([owner.waitForURL(`${idp.url}/account/settings/passkeys`), owner.getByRole('button', { name: 'Confirm', exact: true }).click()]);
    await owner.getByLabel('Passkey name').fill('Laptop');
    await Promise.all([owner.waitForURL(/notice=added/), owner.getByRole('button', { name: 'Add a passkey' }).click()]);
    expect(await owner.getByTestId('passkey-name').allTextContents()).to.deep.equal(['Laptop']);
    const added = await smtp.next(user.email);
    expect(added.subject).to.equal('A passkey was added');
    expect(added.text).to.include('A passkey named "Laptop" was added to your account');
    expect(added.text).to.match(/^Browser: +Chrome on Linux$/m);
    expect(added.text).to.match(/^Address: +127\.0\.0\.1$/m);

    // Back, then reload: the passkey is listed, and nothing was sent again.
    await owner.goBack();
    await owner.reload();
    expect(await owner.getByTestId('passkey-name').allTextContents()).to.deep.equal(['Laptop']);

    await owner.getByTestId('passkey-row').getByLabel('Your password').fill(user.password);
    await Promise.all([owner.waitForURL(/notice=removed/), owner.getByTestId('passkey-row').getByRole('button', { name: 'Remove' }).click()]);
    const removed = await smtp.next(user.email);
    expect(removed.subject).to.equal('A passkey was removed');
    expect(removed.text).to.include('The passkey named "Laptop" was removed from your account.');
  });

  it('a passkey answers the prompt, and the interrupted token form goes on', async () => {
    const user = await makeUser(idp.db);
    const page = await chromium.newPage();
    await withAuthenticator(page);
    await signInThroughPage(page, idp.url, user);
    await page.goto(`${idp.url}/account/settings/passkeys`);
    await page.getByLabel('Passkey name').fill('Phone');
    await Promise.all([page.waitForURL(/notice=added/), page.getByRole('button', { name: 'Add a passkey' }).click()]);
    await ageSession(idp, (await sessionCookie(page)).value, 11);

    await page.goto(`${idp.url}/account/settings/tokens`);
    await page.getByLabel('Token name').fill('with a passkey');
    await page.getByLabel('groups:read-only').check();
    await page.getByRole('button', { name: 'Generate token' }).click();
    await page.getByRole('heading', { name: 'Confirm access' }).waitFor();
    expect(await idp.db('personal_access_tokens').where({ user_id: user.id }).first()).to.equal(undefined);
    await Promise.all([page.waitForURL(/notice=token-created/), page.getByRole('button', { name: 'Use a passkey' }).click()]);
    expect(await page.getByTestId('new-token').textContent()).to.match(/^ha_[0-9A-Za-z]{36}$/);
    expect((await idp.db('personal_access_tokens').where({ user_id: user.id }).first('name')).name).to.equal('with a passkey');
  });

  it('turning on two-factor after a while asks for the password first, then shows the QR code', async () => {
    const user = await makeUser(idp.db);
    const page = await chromium.newPage();
    await signedInLongAgo(page, user);
    await page.goto(`${idp.url}/account/settings/two-factor`);
    await page.getByRole('button', { name: 'Set up an authenticator app' }).click();
    await page.getByRole('heading', { name: 'Confirm access' }).waitFor();
    await page.getByLabel('Password').fill(user.password);
    await Promise.all([page.waitForURL(`${idp.url}/account/settings/two-factor/setup`), page.getByRole('button', { name: 'Confirm', exact: true }).click()]);
    await page.getByTestId('totp-qr').waitFor();
    // A reload keeps the page (and its secret); Back does not go through the prompt again.
    const secret = await page.getByTestId('totp-secret').textContent();
    await page.reload();
    expect(await page.getByTestId('totp-secret').textContent()).to.equal(secret);
  });
});
