import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { isWellFormedToken } from '../../src/tokens.js';
import { describeEachProfile, freePort, useIdp } from '../helpers/app.js';
import { Browser } from '../helpers/browser.js';
import { makeClient } from '../helpers/factories.js';
import { callbackOf, passProvider } from '../helpers/oauth.js';

/**
 * oidc-agent (Debian's oidc-agent-cli): `oidc-gen` registers an account with the application's
 * client ID and secret through the authorization-code flow (its own web server on a loopback
 * port receives the callback), and `oidc-token` hands out access tokens, refreshing with the
 * configured scope, offline_access included, when the one it holds is too short-lived.
 */
const run = promisify(execFile);
const SCOPE = 'openid groups:read-only offline_access';

/** oidc-gen prints the authorization URL on stderr, then waits for the agent to get the callback. */
function waitForLine(child: ChildProcess, pattern: RegExp, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => reject(new Error(`oidc-gen printed no line matching ${pattern} in ${timeoutMs} ms: ${seen}`)), timeoutMs);
    const onData = (chunk: Buffer) => {
      seen += chunk.toString('utf8');
      const line = seen.split('\n').find((l) => pattern.test(l));
      if (line) {
        clearTimeout(timer);
        resolve(line.trim());
      }
    };
    child.stderr!.on('data', onData);
    child.stdout!.on('data', onData);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`oidc-gen exited (${code}) before printing the URL: ${seen}`));
    });
  });
}

function exited(child: ChildProcess): Promise<{ code: number | null; output: string }> {
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output += c.toString('utf8')));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString('utf8')));
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, output })));
}

describeEachProfile('oidc-agent against the provider', function (profile) {
  this.timeout(60_000);
  const server = useIdp(profile);
  let home: string;
  let env: NodeJS.ProcessEnv;
  let agentPid: number | undefined;
  let accessToken: string;

  before(async () => {
    await run('oidc-gen', ['--version']).catch(() => {
      throw new Error('oidc-gen is missing: install Debian\'s oidc-agent (apt-get install oidc-agent), as .ci/run does');
    });
    // The agent and its account configuration live in a directory of this test alone.
    home = mkdtempSync(join(tmpdir(), 'idp-oidc-agent-'));
    const started = await run('oidc-agent', ['--json', '--quiet', '-a', join(home, 'agent-XXXXXX', 'sock')], { env: { ...process.env, HOME: home } });
    const agent = JSON.parse(started.stdout) as { socket: string; dpid: string | number };
    agentPid = Number(agent.dpid);
    env = { ...process.env, HOME: home, OIDC_SOCK: agent.socket, OIDC_ENCRYPTION_PW: 'a password for the test account file' };
  });
  after(async () => {
    if (agentPid) {
      try {
        process.kill(agentPid);
      } catch {
        // already gone
      }
    }
    if (home && existsSync(home)) rmSync(home, { recursive: true, force: true });
  });

  it('registers an account with oidc-gen through the authorization-code flow', async () => {
    const redirectUri = `http://localhost:${await freePort()}/`;
    const app = await makeClient(server.db, { redirectUri });

    const gen = spawn('oidc-gen', [
      `--issuer=${server.url}`, `--client-id=${app.clientId}`, `--client-secret=${app.clientSecret}`,
      `--redirect-uri=${redirectUri}`, `--scope=${SCOPE}`, '--flow=code', '--no-url-call', '--pw-env',
      '--confirm-default', '--prompt=none', 'horizon',
    ], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const done = exited(gen);
    const url = await waitForLine(gen, /^https?:\/\//, 20_000);
    const authorize = new URL(url);
    expect(authorize.searchParams.get('scope')).to.equal(SCOPE);

    const callback = callbackOf(await passProvider(new Browser(server.url), url, app.user, { callback: redirectUri }), redirectUri);
    expect(callback.searchParams.get('error'), callback.toString()).to.equal(null);
    // The browser's last step: the agent's web server receives the code and exchanges it.
    const landed = await fetch(callback);
    expect(landed.status).to.equal(200);
    await landed.arrayBuffer();

    const { code, output } = await done;
    expect(code, output).to.equal(0);
    const token = await run('oidc-token', ['horizon'], { env });
    accessToken = token.stdout.trim();
    expect(isWellFormedToken(accessToken, 'ho_'), token.stdout).to.equal(true);
  });

  it('gets a fresh access token through a refresh with its configured scope, offline_access included', async () => {
    expect(accessToken, 'the registration test ran first').to.be.a('string');
    // Asking for more lifetime than the token left makes the agent refresh, sending scope=SCOPE.
    const refreshed = await run('oidc-token', ['--time=3700', 'horizon'], { env });
    const fresh = refreshed.stdout.trim();
    expect(isWellFormedToken(fresh, 'ho_'), refreshed.stdout + refreshed.stderr).to.equal(true);
    expect(fresh).not.to.equal(accessToken);
    const me = await fetch(`${server.url}/apis/v2/groups`, { headers: { authorization: `Bearer ${fresh}` } });
    expect(me.status).to.equal(200);
  });
});
