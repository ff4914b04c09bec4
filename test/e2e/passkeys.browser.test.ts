import { expect } from 'chai';
import type { Page } from 'playwright-core';
import * as client from 'openid-client';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { makeClient, makeUser, type TestUser } from '../helpers/factories.js';
import { withTwoFactor } from '../helpers/totp.js';
import { signInThroughPage, useChromium } from './support.js';

const REDIRECT_URI = 'http://localhost:9999/passkeys/callback';

/**
 * Passkeys in real Chromium, with the DevTools virtual authenticator standing in for the
 * device's (a platform authenticator that keeps discoverable credentials and verifies its user).
 * The issuer is http://localhost:<port>: WebAuthn accepts a host name as the relying party, not an
 * IP address.
 */
describeEachProfile('Passkeys in a real browser', function (profile) {
  this.timeout(60_000);

  const idp = useIdp(profile, { ISSUER: 'http://localhost:{port}' });
  const chromium = useChromium();

  /**
   * A new browser profile with one virtual authenticator; its credentials, for inspection. The
   * virtual authenticator answers a request as soon as it is made, the sign-in page's quiet
   * autofill request too (as if the person picked the passkey from the list at once): so, unless
   * `autofill`, the page runs as in a browser without passkey autofill, and its buttons are what
   * the test exercises.
   */
  async function browserWithAuthenticator(options: { autofill?: boolean } = {}) {
    const page = await chromium.newPage();
    if (!options.autofill) await page.addInitScript(() => { PublicKeyCredential.isConditionalMediationAvailable = () => Promise.resolve(false); });
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('WebAuthn.enable');
    const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
      options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
    });
    return {
      page,
      credentials: async () => (await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials,
    };
  }

  async function addPasskey(page: Page, name: string) {
    await page.goto(`${idp.url}/account/settings/passkeys`);
    await page.getByLabel('Passkey name').fill(name);
    await Promise.all([page.waitForURL(/notice=added/), page.getByRole('button', { name: 'Add a passkey' }).click()]);
    expect(await page.getByTestId('passkey-name').allTextContents()).to.include(name);
  }

  async function signOut(page: Page) {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(/\/login/);
  }

  it('registers a passkey in Account settings, then signs in with it alone: no username, no password', async () => {
    const user = await makeUser(idp.db);
    const { page, credentials } = await browserWithAuthenticator();
    await signInThroughPage(page, idp.url, user);
    await addPasskey(page, 'Laptop');
    const [credential] = await credentials();
    expect(credential!.isResidentCredential).to.equal(true);
    const stored = await idp.db('webauthn_credentials').where({ user_id: user.id }).first('credential_id', 'name');
    expect(stored.name).to.equal('Laptop');

    await signOut(page);
    await page.goto(`${idp.url}/login`);
    // The answer as it goes over the wire: played again, with its challenge cookie, it must not sign in.
    const sent = page.waitForRequest((req) => req.url().endsWith('/login/passkey') && req.method() === 'POST');
    await Promise.all([page.waitForURL(`${idp.url}/groups`), page.getByRole('button', { name: 'Sign in with a passkey' }).click()]);
    expect(await page.locator('.who').textContent()).to.equal(user.username);
    const used = await idp.db('webauthn_credentials').where({ user_id: user.id }).first('last_used_at');
    expect(used.last_used_at).to.not.equal(null);

    const captured = await sent;
    const replay = await fetch(captured.url(), { method: 'POST', headers: await captured.allHeaders(), body: captured.postData()!, redirect: 'manual' });
    // Refused (by the signature counter here; by the spent challenge for authenticators that keep no counter), and no session.
    expect(replay.status).to.equal(400);
    expect(replay.headers.getSetCookie().some((c) => c.startsWith('idp_session='))).to.equal(false);
  });

  it('offers passkeys in the username field\'s autofill where the browser can; picked there, it signs in', async () => {
    const user = await makeUser(idp.db);
    const { page } = await browserWithAuthenticator({ autofill: true });
    await signInThroughPage(page, idp.url, user);
    await addPasskey(page, 'Desktop');
    expect(await page.evaluate(() => PublicKeyCredential.isConditionalMediationAvailable())).to.equal(true);

    const problems: string[] = [];
    page.on('console', (message) => { if (message.type() === 'error') problems.push(message.text()); });
    page.on('pageerror', (err) => problems.push(err.message));
    expect(await (await fetch(`${idp.url}/login`)).text()).to.match(/<input id="login" name="login" type="text"[^>]*autocomplete="username webauthn"/);
    await signOut(page);
    // Sign in follows by itself: the virtual authenticator answers the autofill request at once,
    // as a person picking the passkey from the list would. (It cannot leave that request pending
    // while the button is pressed instead: with presence off it answers neither, even once presence
    // is back on. So the button's cancelling of the pending request is not exercised here; the
    // tests that press the buttons run as in a browser without passkey autofill.)
    await page.waitForURL(`${idp.url}/groups`);
    expect(await page.locator('.who').textContent()).to.equal(user.username);
    expect(problems).to.deep.equal([]);
  });

  it('answers the second step after the password when two-factor is on', async () => {
    const user = await makeUser(idp.db);
    const { page } = await browserWithAuthenticator();
    await signInThroughPage(page, idp.url, user);
    await addPasskey(page, 'Phone');
    await withTwoFactor(idp.db, user);
    await signOut(page);

    await page.goto(`${idp.url}/login`);
    await page.getByLabel('Username or email').fill(user.username);
    await page.getByLabel('Password').fill(user.password);
    await Promise.all([page.waitForURL(/\/login\/two-factor/), page.getByRole('button', { name: 'Sign in', exact: true }).click()]);
    await Promise.all([page.waitForURL(`${idp.url}/groups`), page.getByRole('button', { name: 'Use a passkey' }).click()]);
    expect(await page.locator('.who').textContent()).to.equal(user.username);
  });

  it('signs in to an application with a passkey alone; the ID token says hwk as openid-client reads it', async () => {
    const user: TestUser = await makeUser(idp.db);
    const app = await makeClient(idp.db, { redirectUri: REDIRECT_URI, user });
    const { page } = await browserWithAuthenticator();
    await signInThroughPage(page, idp.url, user);
    await addPasskey(page, 'Laptop');
    await signOut(page);

    const config = await client.discovery(new URL(idp.url), app.clientId, app.clientSecret, undefined, { execute: [client.allowInsecureRequests] });
    const verifier = client.randomPKCECodeVerifier();
    const url = client.buildAuthorizationUrl(config, { redirect_uri: REDIRECT_URI, scope: 'openid', code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state: 'st' });
    let callback: URL | undefined;
    await page.route('http://localhost:9999/**', (route) => {
      callback = new URL(route.request().url());
      return route.fulfill({ status: 200, body: 'back at the application' });
    });
    await page.goto(url.href);
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await page.getByRole('button', { name: 'Authorize' }).click();
    await page.waitForURL(/localhost:9999/);
    const tokens = await client.authorizationCodeGrant(config, callback!, { pkceCodeVerifier: verifier, expectedState: 'st' });
    expect(tokens.claims()!.amr).to.deep.equal(['hwk', 'user', 'mfa']);
  });

  it('adding a passkey this authenticator already holds shows only the error, not the earlier "Passkey added"', async () => {
    const user = await makeUser(idp.db);
    const { page, credentials } = await browserWithAuthenticator();
    await signInThroughPage(page, idp.url, user);
    await addPasskey(page, 'Laptop');
    expect(await page.getByTestId('notice').isVisible(), 'the first one was added').to.equal(true);

    await page.getByLabel('Passkey name').fill('Laptop again');
    await page.getByRole('button', { name: 'Add a passkey' }).click();
    const status = page.locator('[data-passkey-status]');
    await page.waitForFunction(() => document.querySelector('[data-passkey-status]')?.textContent !== '');
    expect(await status.textContent()).to.match(/^The passkey did not work/);
    expect(await page.getByTestId('notice').isVisible(), 'no "Passkey added" beside the error').to.equal(false);
    expect(await page.getByTestId('passkey-name').allTextContents()).to.deep.equal(['Laptop']);
    expect(await credentials()).to.have.length(1);
  });

  it('removing a passkey needs the password; then it no longer signs in', async () => {
    const user = await makeUser(idp.db);
    const { page } = await browserWithAuthenticator();
    await signInThroughPage(page, idp.url, user);
    await addPasskey(page, 'Old key');
    const row = page.getByTestId('passkey-row');
    await row.getByLabel('Your password').fill('not the password at all');
    await row.getByRole('button', { name: 'Remove' }).click();
    await page.getByText('The current password is incorrect.').waitFor();
    await page.getByTestId('passkey-row').getByLabel('Your password').fill(user.password);
    await Promise.all([page.waitForURL(/notice=removed/), page.getByTestId('passkey-row').getByRole('button', { name: 'Remove' }).click()]);
    expect(await page.getByTestId('no-passkeys').isVisible()).to.equal(true);

    await signOut(page);
    await page.goto(`${idp.url}/login`);
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await page.getByText('That passkey is not registered here').waitFor();
    expect(new URL(page.url()).pathname).to.equal('/login/passkey');
  });
});
