import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { insertSignInProvider } from '../../src/db/sign-in-providers.js';
import { findIdentity } from '../../src/db/identities.js';
import { findUserByUsername } from '../../src/db/users.js';
import { sealClientSecret } from '../../src/services/federation/providers.js';
import { now } from '../../src/time.js';
import { describeEachProfile, listen, startIdp, useHooks, useIdp } from '../helpers/app.js';
import { makeClient, makeUser, type Client } from '../helpers/factories.js';
import { authorizeUrl } from '../helpers/oauth.js';
import { launchChromium } from './support.js';

/**
 * Signing in at one Horizon ID (A) with an account of another (B), in Chromium: B is a real
 * upstream OpenID Connect provider, with A registered there as an OAuth application. In the
 * middle of a third-party application's authorization flow at A, the person continues with B,
 * signs in and consents there, makes their account at A from B's profile, then consents at A and
 * the application gets its code. A person whose address already has an account at A links it by
 * its password. The sign-in page with providers, the sign-up and the link pages are
 * photographed at 1200 and 390 px into tmp/screenshots/.
 */
/** Where this test leaves its screenshots to look at (the docs' are taken by docs/screenshots/take-federation.ts). */
const SHOTS = fileURLToPath(new URL('../../tmp/screenshots/', import.meta.url));
const SLUG = 'horizon-b';

describeEachProfile('Signing in with another Horizon ID in a real browser', function (profile) {
  this.timeout(90_000);
  const a = useIdp(profile);
  const b = useHooks(() => startIdp(profile), (idp) => idp.stop());
  let chromium: Browser;
  let callbackServer: Awaited<ReturnType<typeof listen>>;
  let app: Client;

  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    chromium = await launchChromium();
    callbackServer = await listen((_req, res) => {
      res.setHeader('content-type', 'text/html');
      res.end('<h1>callback reached</h1>');
    });
    // A, registered at B as an OAuth application whose callback is A's for this provider.
    const registration = await makeClient(b.db, { name: 'Horizon ID A', redirectUri: `${a.url}/login/callback/${SLUG}` });
    await insertSignInProvider(a.db, {
      slug: SLUG,
      kind: 'oidc',
      name: 'Horizon B',
      client_id: registration.clientId,
      client_secret: sealClientSecret(undefined, registration.clientSecret),
      scopes: 'openid email profile',
      settings: JSON.stringify({ issuer: b.url }),
      allow_sign_up: true,
      allowed_domains: '',
      trust_mfa: false,
      position: 0,
    }, now());
    app = await makeClient(a.db, { name: 'Nightly Builds', redirectUri: `${callbackServer.url}/callback` });
  });
  after(async () => {
    await chromium?.close();
    await callbackServer?.close();
  });

  async function shoot(page: Page, name: string): Promise<void> {
    // One set of pictures is enough: the SQLite run takes them.
    if (profile !== 'sqlite') return;
    for (const width of [1200, 390]) {
      await page.setViewportSize({ width, height: width > 600 ? 800 : 844 });
      await page.screenshot({ path: join(SHOTS, `${name}-${width > 600 ? 'desktop' : 'phone'}.png`), fullPage: true });
    }
    await page.setViewportSize({ width: 1200, height: 800 });
  }

  /** At B: signs in with the account's username and password, then authorizes A. */
  async function passUpstream(page: Page, person: { username: string; password: string }): Promise<void> {
    await page.waitForURL(`${b.url}/**`);
    await page.getByLabel('Username or email').fill(person.username);
    await page.getByLabel('Password').fill(person.password);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('button', { name: 'Authorize' }).click();
    await page.waitForURL(`${a.url}/**`);
  }

  it('signs in with B in the middle of an application\'s flow at A, makes the account from B\'s profile, then consent and a code', async () => {
    const person = await makeUser(b.db, { name: 'Grace Hopper' });
    const context = await chromium.newContext({ viewport: { width: 1200, height: 800 } });
    try {
      const page = await context.newPage();
      await page.goto(authorizeUrl(a.url, { ...app, scope: 'openid profile', state: 'federated-state' }));
      expect(await page.getByTestId('flow-app').textContent()).to.include('Nightly Builds');
      const button = page.getByRole('button', { name: 'Continue with Horizon B' });
      await button.waitFor();
      await shoot(page, 'sign-in-providers');

      await button.click();
      await passUpstream(page, person);

      await page.waitForURL(`${a.url}/login/continue/sign-up`);
      expect(await page.getByLabel('Username', { exact: true }).inputValue()).to.equal(person.username);
      expect(await page.getByLabel('Name', { exact: true }).inputValue()).to.equal('Grace Hopper');
      expect(await page.getByTestId('sign-up-email').textContent()).to.equal(person.email);
      await shoot(page, 'sign-up-from-provider');
      await page.getByRole('button', { name: 'Create account' }).click();

      await page.waitForURL(/\/interaction\//);
      await page.getByRole('button', { name: 'Authorize' }).click();
      await page.waitForURL(`${callbackServer.url}/callback?**`);
      const callback = new URL(page.url());
      expect(callback.searchParams.get('code')).to.be.a('string');
      expect(callback.searchParams.get('state')).to.equal('federated-state');
      const made = (await findUserByUsername(a.db, person.username))!;
      expect(made.email).to.equal(person.email);
    } finally {
      await context.close();
    }
  });

  it('links B to the A account with the same verified address after its password, and goes back on the Back button without an error', async () => {
    const owner = await makeUser(a.db);
    const person = await makeUser(b.db, { email: owner.email });
    const context = await chromium.newContext({ viewport: { width: 1200, height: 800 } });
    try {
      const page = await context.newPage();
      await page.goto(`${a.url}/login`);
      await page.getByRole('button', { name: 'Continue with Horizon B' }).click();
      await passUpstream(page, person);

      await page.waitForURL(`${a.url}/login/continue/link`);
      expect(await page.getByRole('heading', { level: 1 }).textContent()).to.equal('An account with this address exists');
      await shoot(page, 'link-account');
      await page.getByLabel('Password').fill(owner.password);
      await page.getByRole('button', { name: 'Sign in and link' }).click();
      await page.waitForURL(`${a.url}/groups`);
      expect(await page.locator('.who').textContent()).to.equal(owner.username);
      const b_user = (await findUserByUsername(b.db, person.username))!;
      expect((await findIdentity(a.db, (await a.db('sign_in_providers').where({ slug: SLUG }).first()).id, String(b_user.id)))!.user_id).to.equal(owner.id);

      // Back to the callback: a page that says the sign-in was already finished, never an error.
      await page.goBack();
      await page.goBack();
      const status = await page.evaluate(() => document.title);
      expect(status).to.not.match(/Internal|500/);
    } finally {
      await context.close();
    }
  });
});
