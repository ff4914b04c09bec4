import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import type { Browser } from 'playwright-core';
import { updateApplication } from '../../src/services/apps.js';
import { describeEachProfile, freePort, useIdp, waitFor } from '../helpers/app.js';
import { appAccess, makeClient, makeUser, type TestUser } from '../helpers/factories.js';
import { setEmailVerified } from '../helpers/email-verification.js';
import { CHROMIUM, launchChromium } from '../e2e/support.js';
import { stopChild } from '../helpers/processes.js';

/**
 * A real Apache httpd (Debian's apache2) with mod_auth_openidc, run as a process of the test
 * (never the system service): its own configuration in a temporary directory, a free loopback
 * port, a page under /protected that shows the signed-in user through server-side includes,
 * and /bye.html to come back to after signing out.
 */
const APACHE = '/usr/sbin/apache2';
const MOD_AUTH_OPENIDC = '/usr/lib/apache2/modules/mod_auth_openidc.so';
const MODULES = '/usr/lib/apache2/modules';

/** The URLs of the relying party Apache serves on `port`. */
function relyingPartyUrls(port: number) {
  const url = `http://127.0.0.1:${port}`;
  const signedOutUrl = `${url}/bye.html`;
  return {
    url,
    /** mod_auth_openidc's redirect URI: the application's callback URL. */
    redirectUri: `${url}/protected/redirect_uri`,
    /** Where the person lands after signing out: the application's sign-out redirect URL. */
    signedOutUrl,
    /** The page behind sign-in. */
    protectedUrl: `${url}/protected/index.html`,
    /** mod_auth_openidc's logout: RP-initiated logout at the provider, then back to signedOutUrl. */
    logoutUrl: `${url}/protected/redirect_uri?logout=${encodeURIComponent(signedOutUrl)}`,
  };
}

type Client = { issuer: string; clientId: string; clientSecret: string };

function config(dir: string, port: number, client: Client): string {
  const quoted = (value: string) => `"${value.replace(/["\\]/g, '\\$&')}"`;
  return `ServerRoot ${quoted(dir)}
ServerName 127.0.0.1
Listen 127.0.0.1:${port}
PidFile ${quoted(join(dir, 'httpd.pid'))}
DefaultRuntimeDir ${quoted(dir)}
ErrorLog ${quoted(join(dir, 'error.log'))}
LogLevel warn auth_openidc:info
${process.getuid?.() === 0 ? 'User nobody\nGroup nogroup' : ''}
LoadModule mpm_event_module ${MODULES}/mod_mpm_event.so
LoadModule authn_core_module ${MODULES}/mod_authn_core.so
LoadModule authz_core_module ${MODULES}/mod_authz_core.so
LoadModule authz_user_module ${MODULES}/mod_authz_user.so
LoadModule include_module ${MODULES}/mod_include.so
LoadModule auth_openidc_module ${MOD_AUTH_OPENIDC}

DocumentRoot ${quoted(join(dir, 'htdocs'))}
<Directory ${quoted(join(dir, 'htdocs'))}>
  Require all granted
</Directory>

OIDCProviderMetadataURL ${client.issuer}/.well-known/openid-configuration
OIDCClientID ${client.clientId}
OIDCClientSecret ${client.clientSecret}
OIDCRedirectURI ${relyingPartyUrls(port).redirectUri}
OIDCCryptoPassphrase ${randomBytes(24).toString('hex')}
OIDCScope "openid profile email"
OIDCRemoteUserClaim preferred_username

<Location /protected>
  AuthType openid-connect
  Require valid-user
  Options +Includes
  SetOutputFilter INCLUDES
</Location>
`;
}

async function startApache(port: number, client: Client) {
  const dir = mkdtempSync(join(tmpdir(), 'idp-apache-'));
  // The server's children run as nobody when the test runs as root: they must read the pages.
  chmodSync(dir, 0o755);
  const urls = relyingPartyUrls(port);
  mkdirSync(join(dir, 'htdocs', 'protected'), { recursive: true });
  writeFileSync(
    join(dir, 'htdocs', 'protected', 'index.html'),
    '<!doctype html><title>Protected</title>\n<p>Signed in as <span id="user"><!--#echo var="REMOTE_USER" --></span>' +
      ' (<span id="name"><!--#echo var="OIDC_CLAIM_name" --></span>, <span id="email"><!--#echo var="OIDC_CLAIM_email" --></span>)</p>\n',
  );
  writeFileSync(join(dir, 'htdocs', 'bye.html'), '<!doctype html><title>Signed out</title>\n<p id="bye">You have signed out.</p>\n');
  const conf = join(dir, 'httpd.conf');
  writeFileSync(conf, config(dir, port, client));

  let output = '';
  const child = spawn(APACHE, ['-f', conf, '-DFOREGROUND'], { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C' } });
  child.stdout!.on('data', (c: Buffer) => (output += c.toString('utf8')));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString('utf8')));
  const errorLog = () => {
    const file = join(dir, 'error.log');
    return `${output}${existsSync(file) ? readFileSync(file, 'utf8') : ''}`;
  };
  await waitFor(
    () => {
      if (child.exitCode !== null) throw new Error(`apache2 exited (${child.exitCode}): ${errorLog()}`);
      return fetch(urls.url).then(() => true, () => false);
    },
    () => `apache2 did not listen on ${port}: ${errorLog()}`,
  );

  return {
    ...urls,
    /** The error log so far (mod_auth_openidc logs there), for failure messages. */
    errorLog,
    async stop() {
      await stopChild(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

type RunningApache = Awaited<ReturnType<typeof startApache>>;

/**
 * mod_auth_openidc (Debian's libapache2-mod-auth-openidc) in a real Apache, driven by Chromium:
 * a page behind sign-in shows the user, and mod_auth_openidc's standard logout goes through the
 * provider's RP-initiated logout and back to the application's registered sign-out URL.
 */
describeEachProfile('mod_auth_openidc in Apache against the provider', function (profile) {
  this.timeout(60_000);
  const server = useIdp(profile);
  let apache: RunningApache;
  let browser: Browser;
  let user: TestUser;

  before(async () => {
    for (const [file, pkg] of [[APACHE, 'apache2'], [MOD_AUTH_OPENIDC, 'libapache2-mod-auth-openidc'], [CHROMIUM, 'chromium']] as const) {
      if (!existsSync(file)) throw new Error(`${file} is missing: install Debian's ${pkg} (apt-get install ${pkg}), as .ci/run does`);
    }
    user = await makeUser(server.db, { name: 'Grace Hopper' });
    // The address is released (ID token, userinfo) only once verified.
    await setEmailVerified(server.db, user, true);
    const port = await freePort();
    const { redirectUri, signedOutUrl } = relyingPartyUrls(port);
    const app = await makeClient(server.db, { user, redirectUri });
    await updateApplication(server.db, server.idp.provider, await appAccess(server.db, user.id, app.clientId), { signOutRedirectURLs: [signedOutUrl] });
    apache = await startApache(port, { issuer: server.url, clientId: app.clientId, clientSecret: app.clientSecret });
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await apache?.stop();
  });

  it('signs in through the provider, shows the user on the protected page, then signs out back to the registered URL', async () => {
    const page = await browser.newPage();
    try {
      await page.goto(apache.protectedUrl);
      expect(new URL(page.url()).origin, apache.errorLog()).to.equal(server.url);
      await page.getByLabel('Username or email').fill(user.username);
      await page.getByLabel('Password').fill(user.password);
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
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
