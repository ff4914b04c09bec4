import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { Browser } from '../helpers/browser.js';
import { makeClient } from '../helpers/factories.js';
import { authorize } from '../helpers/oauth.js';

/**
 * Debian's python3-requests-oauthlib is installed for Debian's own interpreter, so the test runs
 * /usr/bin/python3, not whatever `python3` is first on the PATH.
 */
const PYTHON = '/usr/bin/python3';
const SCRIPT = fileURLToPath(new URL('../../examples/python/requests_oauthlib_client.py', import.meta.url));
const REDIRECT_URI = 'http://127.0.0.1:9999/python/callback';
const run = promisify(execFile);

async function python(args: string[]): Promise<Record<string, unknown>> {
  const { stdout } = await run(PYTHON, [SCRIPT, ...args], { timeout: 15_000 });
  return JSON.parse(stdout) as Record<string, unknown>;
}

describeEachProfile('Python requests-oauthlib against the provider', (profile) => {
  const server = useIdp(profile);

  before(async () => {
    // Not a skip: CI installs the package, and a missing one must be seen, not passed over.
    await run(PYTHON, ['-c', 'import requests_oauthlib']).catch(() => {
      throw new Error(`${PYTHON} cannot import requests_oauthlib: install Debian's python3-requests-oauthlib (apt-get install python3-requests-oauthlib), as .ci/run does`);
    });
  });

  it('builds the authorize URL, exchanges the code with client_id and client_secret parameters and lists groups', async () => {
    const app = await makeClient(server.db, { redirectUri: REDIRECT_URI });
    const common = ['--idp', server.url, '--client-id', app.clientId, '--redirect-uri', REDIRECT_URI];

    const { url, state } = (await python(['authorize', ...common])) as { url: string; state: string };
    const built = new URL(url);
    expect(`${built.origin}${built.pathname}`).to.equal(`${server.url}/login/oauth/authorize`);
    expect(built.searchParams.get('state')).to.equal(state);

    const callback = await authorize(
      new Browser(server.url),
      { clientId: built.searchParams.get('client_id')!, redirectUri: built.searchParams.get('redirect_uri')!, scope: built.searchParams.get('scope')!, state },
      app.user,
    );

    const result = (await python(['exchange', ...common, '--client-secret', app.clientSecret, '--state', state, '--callback-url', callback.toString()])) as {
      token: Record<string, unknown>;
      groups: { data: { total: number; items: Array<{ id: number; role: string }> } };
    };
    expect(result.token.access_token).to.match(/^ho_/);
    expect(result.token.token_type).to.equal('bearer');
    expect(result.token.expire_in).to.equal('3600');
    expect(result.token.scope).to.deep.equal(['groups:read-only']);
    expect(result.groups.data.total).to.equal(1);
    expect(result.groups.data.items[0]).to.include({ id: app.group.id, role: 'owner' });
  });

  it('refuses, in the client, a callback whose state is not the one it sent', async () => {
    const app = await makeClient(server.db, { redirectUri: REDIRECT_URI });
    const callback = await authorize(new Browser(server.url), { ...app, state: 'state-of-another-request' }, app.user);
    const args = ['exchange', '--idp', server.url, '--client-id', app.clientId, '--redirect-uri', REDIRECT_URI, '--client-secret', app.clientSecret, '--state', 'the-state-it-sent', '--callback-url', callback.toString()];
    const failure = await run(PYTHON, [SCRIPT, ...args]).then(() => undefined, (err: { stderr: string }) => err);
    expect(failure, 'the exchange succeeded with a mismatched state').to.not.equal(undefined);
    expect(failure!.stderr).to.include('MismatchingStateError');
  });
});
