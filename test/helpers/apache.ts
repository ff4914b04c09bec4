import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A real Apache httpd (Debian's apache2) with mod_auth_openidc, run as a process of the test
 * (never the system service): its own configuration in a temporary directory, a free loopback
 * port, a page under /protected that shows the signed-in user through server-side includes,
 * and /bye.html to come back to after signing out.
 */
export const APACHE = '/usr/sbin/apache2';
export const MOD_AUTH_OPENIDC = '/usr/lib/apache2/modules/mod_auth_openidc.so';
const MODULES = '/usr/lib/apache2/modules';

export interface RelyingPartyUrls {
  /** http://127.0.0.1:<port> */
  url: string;
  /** mod_auth_openidc's redirect URI: the application's callback URL. */
  redirectUri: string;
  /** Where the person lands after signing out: the application's sign-out redirect URL. */
  signedOutUrl: string;
  /** The page behind sign-in. */
  protectedUrl: string;
  /** mod_auth_openidc's logout: RP-initiated logout at the provider, then back to signedOutUrl. */
  logoutUrl: string;
}

export interface RunningApache extends RelyingPartyUrls {
  stop(): Promise<void>;
  /** The error log so far (mod_auth_openidc logs there), for failure messages. */
  errorLog(): string;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

export function relyingPartyUrls(port: number): RelyingPartyUrls {
  const url = `http://127.0.0.1:${port}`;
  const signedOutUrl = `${url}/bye.html`;
  return {
    url,
    redirectUri: `${url}/protected/redirect_uri`,
    signedOutUrl,
    protectedUrl: `${url}/protected/index.html`,
    logoutUrl: `${url}/protected/redirect_uri?logout=${encodeURIComponent(signedOutUrl)}`,
  };
}

function config(dir: string, port: number, urls: RelyingPartyUrls, client: { issuer: string; clientId: string; clientSecret: string }): string {
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
OIDCRedirectURI ${urls.redirectUri}
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

function waitForPort(port: number, child: ChildProcess, log: () => string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const attempt = () => {
      if (child.exitCode !== null) return reject(new Error(`apache2 exited (${child.exitCode}): ${log()}`));
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve();
      });
      socket.once('error', () => {
        socket.destroy();
        if (Date.now() > deadline) reject(new Error(`apache2 did not listen on ${port}: ${log()}`));
        else setTimeout(attempt, 100);
      });
    };
    attempt();
  });
}

export async function startApache(port: number, client: { issuer: string; clientId: string; clientSecret: string }): Promise<RunningApache> {
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
  writeFileSync(conf, config(dir, port, urls, client));

  let output = '';
  const child = spawn(APACHE, ['-f', conf, '-DFOREGROUND'], { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C' } });
  child.stdout!.on('data', (c: Buffer) => (output += c.toString('utf8')));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString('utf8')));
  const errorLog = () => {
    const file = join(dir, 'error.log');
    return `${output}${existsSync(file) ? readFileSync(file, 'utf8') : ''}`;
  };
  await waitForPort(port, child, errorLog);

  return {
    ...urls,
    errorLog,
    async stop() {
      if (child.exitCode === null) {
        const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
        child.kill('SIGTERM');
        await Promise.race([gone, new Promise((resolve) => setTimeout(resolve, 5000))]);
        if (child.exitCode === null) child.kill('SIGKILL');
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
