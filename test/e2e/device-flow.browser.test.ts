import { expect } from 'chai';
import * as client from 'openid-client';
import type { Page } from 'playwright-core';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { makeApp, makeGroup, makeUser, PASSWORD, type TestUser } from '../helpers/factories.js';
import { useMailServer } from '../helpers/smtp.js';
import { finishSignUpFromMail, signInThroughPage, useChromium } from './support.js';

/** openid-client over plain http: the test server is on loopback. */
const insecure = { execute: [client.allowInsecureRequests] };
const DESKTOP = { width: 1200, height: 900 };
const PHONE = { width: 390, height: 844 };

/**
 * The device flow as a person goes through it in Chromium: a device (openid-client) asks for a
 * code, the person enters it at /login/device (or opens verification_uri_complete), checks it on
 * the confirmation page, signs in (or signs up, or switches account), consents, and ends on the
 * success page, while the device's polls get the tokens. At 390 px the page fits and a wrong code
 * is said beside the field.
 */
describeEachProfile('The device flow in a real browser', function (profile) {
  this.timeout(90_000);
  const smtp = useMailServer();
  const idp = useIdp(profile, () => ({ DEVICE_POLL_INTERVAL_S: '1', SMTP_URL: smtp.url }));
  const browser = useChromium();
  let config: client.Configuration;

  before(async () => {
    const owner = await makeUser(idp.db);
    const group = await makeGroup(idp.db, owner.id);
    const device = await makeApp(idp.db, owner.id, group.id, { name: 'Living Room TV', deviceFlow: true });
    config = await client.discovery(new URL(idp.url), device.clientId, device.clientSecret, undefined, insecure);
  });

  const start = () => client.initiateDeviceAuthorization(config, { scope: 'openid groups:read-only' });

  /** The code page: types the code (as a person might, in lower case) and continues to the confirmation. */
  async function enterCode(page: Page, userCode: string): Promise<void> {
    await page.getByTestId('device-code').waitFor();
    await page.getByLabel('Code').fill(userCode.toLowerCase());
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByTestId('device-confirm').waitFor();
  }

  /** The confirmation page shows the device's code; Continue goes on to sign-in or consent. */
  async function confirm(page: Page, userCode: string): Promise<void> {
    expect(await page.getByTestId('user-code').textContent()).to.include(userCode);
    expect(await page.getByTestId('app-name').textContent()).to.equal('Living Room TV');
    await page.getByRole('button', { name: 'Continue' }).click();
  }

  async function signInOnFlowPage(page: Page, user: TestUser): Promise<void> {
    await page.getByLabel('Username or email').fill(user.username);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  }

  async function authorize(page: Page): Promise<void> {
    await page.getByRole('button', { name: 'Authorize' }).click();
    await page.getByTestId('device-success').waitFor();
    expect(await page.locator('main').textContent()).to.include('Living Room TV');
  }

  async function tokensOf(polled: ReturnType<typeof client.pollDeviceAuthorizationGrant>, user: TestUser): Promise<void> {
    const tokens = await polled;
    expect(tokens.access_token).to.match(/^ho_/);
    expect(tokens.claims()!.sub).to.equal(String(user.id));
  }

  it('enter the code, confirm, sign in, consent: the success page, and the device gets tokens', async () => {
    const user = await makeUser(idp.db);
    const response = await start();
    const polled = client.pollDeviceAuthorizationGrant(config, response);
    const page = await browser.newPage({ viewport: DESKTOP });
    await page.goto(response.verification_uri);
    expect(await page.getByTestId('device-code').textContent()).to.include('asked to sign in');
    await enterCode(page, response.user_code);
    await confirm(page, response.user_code);
    await page.getByLabel('Username or email').waitFor();
    expect(await page.getByTestId('flow-app').textContent()).to.include('Living Room TV');
    await signInOnFlowPage(page, user);
    await page.getByTestId('app-name').waitFor();
    // No redirect in a device flow: the consent page names the device instead.
    expect(await page.getByTestId('sent-to').textContent()).to.equal('The device that showed you the code will be signed in.');
    await authorize(page);
    await tokensOf(polled, user);
  });

  it('verification_uri_complete for someone signed in: the confirmation at once, consent, success', async () => {
    const user = await makeUser(idp.db);
    const response = await start();
    const polled = client.pollDeviceAuthorizationGrant(config, response);
    const page = await browser.newPage({ viewport: DESKTOP });
    await signInThroughPage(page, idp.url, user);
    await page.goto(response.verification_uri_complete!);
    await page.getByTestId('device-confirm').waitFor();
    await confirm(page, response.user_code);
    await authorize(page);
    await tokensOf(polled, user);
  });

  it('at 390 px the code page fits the screen and a wrong code is said beside the field', async () => {
    const page = await browser.newPage({ viewport: PHONE });
    await page.goto(`${idp.url}/login/device`);
    const width = () => page.evaluate(() => document.documentElement.scrollWidth);
    expect(await width()).to.be.at.most(390);
    await page.getByLabel('Code').fill('BBBB-BBBB');
    await page.getByRole('button', { name: 'Continue' }).click();
    const error = page.getByTestId('error-message');
    await error.waitFor();
    expect(await error.textContent()).to.match(/not right/);
    expect(await page.getByLabel('Code').inputValue()).to.equal('BBBB-BBBB');
    expect(await page.getByLabel('Code').getAttribute('aria-describedby')).to.equal('user_code-error');
    // Beside the field: just under the input, within its field, not at the top of the page.
    const input = (await page.getByLabel('Code').boundingBox())!;
    const said = (await error.boundingBox())!;
    expect(said.y).to.be.within(input.y + input.height - 1, input.y + input.height + 40);
    expect(await width()).to.be.at.most(390);
  });

  it('at 390 px the confirmation and success pages fit the screen', async () => {
    const user = await makeUser(idp.db);
    const response = await start();
    const polled = client.pollDeviceAuthorizationGrant(config, response);
    const page = await browser.newPage({ viewport: PHONE, userAgent: `Mozilla/5.0 ${'VeryLongDeviceSoftwareName/1.0 '.repeat(6)}` });
    await signInThroughPage(page, idp.url, user);
    await page.goto(response.verification_uri_complete!);
    await page.getByTestId('device-confirm').waitFor();
    const width = () => page.evaluate(() => document.documentElement.scrollWidth);
    expect(await width()).to.be.at.most(390);
    await confirm(page, response.user_code);
    await authorize(page);
    expect(await width()).to.be.at.most(390);
    await tokensOf(polled, user);
  });

  it('"Not you?" at consent signs out and comes back to the same device flow for the other account', async () => {
    const first = await makeUser(idp.db);
    const second = await makeUser(idp.db);
    const response = await start();
    const polled = client.pollDeviceAuthorizationGrant(config, response);
    const page = await browser.newPage({ viewport: DESKTOP });
    await signInThroughPage(page, idp.url, first);
    await page.goto(`${idp.url}/login/device`);
    await enterCode(page, response.user_code);
    await confirm(page, response.user_code);
    await page.getByTestId('not-you').waitFor();
    expect(await page.locator('main').textContent()).to.include(first.username);
    await page.getByRole('button', { name: 'Not you? Use another account' }).click();
    await page.getByLabel('Username or email').waitFor();
    expect(await page.getByTestId('flow-app').textContent()).to.include('Living Room TV');
    await signInOnFlowPage(page, second);
    await page.getByTestId('not-you').waitFor();
    expect(await page.locator('main').textContent()).to.include(second.username).and.not.to.include(first.username);
    await authorize(page);
    await tokensOf(polled, second);
  });

  it('Create an account from the device flow signs up and comes back to its consent', async () => {
    const response = await start();
    const polled = client.pollDeviceAuthorizationGrant(config, response);
    const page = await browser.newPage({ viewport: DESKTOP });
    await page.goto(response.verification_uri);
    await enterCode(page, response.user_code);
    await confirm(page, response.user_code);
    await page.getByRole('link', { name: 'Create an account' }).click();
    await page.waitForURL(/\/signup\?return_to=/);
    const username = `device-${Date.now().toString(36)}`;
    await page.getByLabel('Username').fill(username);
    await page.getByLabel('Email').fill(`${username}@example.test`);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign up' }).click();
    await finishSignUpFromMail(page, smtp, idp.url, `${username}@example.test`, PASSWORD);
    await page.getByRole('button', { name: 'Authorize' }).waitFor();
    await authorize(page);
    const created = await idp.db('users').where({ username }).first('id');
    await tokensOf(polled, { id: Number(created.id) } as TestUser);
  });
});
