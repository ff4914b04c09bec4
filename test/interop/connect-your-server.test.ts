import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { expect } from 'chai';
import * as client from 'openid-client';
import * as withOpenidClient from '../../examples/connect-your-server/openid-client.js';
import * as withSimpleOauth2 from '../../examples/connect-your-server/simple-oauth2.js';
import type { GroupRow } from '../../src/db/groups.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { Browser } from '../helpers/browser.js';
import { makeApp, makeGroup, makeUser, type TestUser } from '../helpers/factories.js';
import { authorize } from '../helpers/oauth.js';

const root = new URL('../../', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, root), 'utf8');
const run = promisify(execFile);

/** The fenced code blocks of the "Connect your server" section of docs/interop.md (the README links there), in order. */
function connectSection(): Array<{ lang: string; code: string }> {
  const page = read('docs/interop.md');
  const start = page.indexOf('\n## Connect your server\n');
  expect(start, 'docs/interop.md has a "Connect your server" section').to.be.greaterThan(-1);
  const end = page.indexOf('\n## ', start + 1);
  const section = page.slice(start, end === -1 ? undefined : end);
  return [...section.matchAll(/```(\w+)\n([\s\S]*?)\n```/g)].map((m) => ({ lang: m[1]!, code: m[2]! }));
}

describe('the "Connect your server" snippets of docs/interop.md', () => {
  it('shows the files of examples/connect-your-server verbatim, so the type-checked code is what readers copy', () => {
    const blocks = connectSection().filter((b) => b.lang === 'ts').map((b) => b.code);
    for (const file of ['examples/connect-your-server/openid-client.ts', 'examples/connect-your-server/simple-oauth2.ts']) {
      expect(blocks, `${file} differs from its block in docs/interop.md`).to.include(read(file).trimEnd());
    }
  });
});

describeEachProfile(`the "Connect your server" snippets of docs/interop.md against a live server`, (profile) => {
  const server = useIdp(profile);
  let user: TestUser;
  let group: GroupRow;

  before(async () => {
    user = await makeUser(server.db);
    group = await makeGroup(server.db, user.id);
  });

  /** Plays the person at the provider for an authorize URL a snippet built; returns the callback URL. */
  function authorizeAs(url: URL, redirectUri: string): Promise<URL> {
    const params = Object.fromEntries(url.searchParams);
    const { client_id, redirect_uri, state, scope, ...extra } = params;
    expect(redirect_uri).to.equal(redirectUri);
    return authorize(new Browser(server.url), { clientId: client_id!, redirectUri, state, scope, extra }, user);
  }

  it('runs the openid-client snippet: sign in, list groups, and a revoked token means sign in again', async () => {
    const redirectUri = 'http://localhost:4000/callback';
    const app = await makeApp(server.db, user.id, group.id, { callbackURL: redirectUri });
    const registration = { issuer: server.url, clientId: app.clientId, clientSecret: app.clientSecret, redirectUri };

    const config = await withOpenidClient.connect(registration);
    const { url, state, codeVerifier } = await withOpenidClient.startSignIn(config, redirectUri);
    const callback = await authorizeAs(url, redirectUri);
    const tokens = await withOpenidClient.finishSignIn(config, callback, { state, codeVerifier });
    const groups = await withOpenidClient.listGroups(server.url, tokens.access_token);
    expect(groups!.map((g) => g.id)).to.deep.equal([group.id]);

    await client.tokenRevocation(config, tokens.access_token);
    expect(await withOpenidClient.listGroups(server.url, tokens.access_token)).to.equal(undefined);
  });

  it('runs the simple-oauth2 snippet and refuses a callback with another state', async () => {
    const redirectUri = 'http://localhost:4000/simple/callback';
    const app = await makeApp(server.db, user.id, group.id, { callbackURL: redirectUri });
    const oauth = withSimpleOauth2.connect({ issuer: server.url, clientId: app.clientId, clientSecret: app.clientSecret });

    const { url, state } = withSimpleOauth2.startSignIn(oauth, redirectUri);
    const callback = await authorizeAs(new URL(url), redirectUri);
    const forged = new URL(callback);
    forged.searchParams.set('state', 'not-the-one-kept');
    const refused = await withSimpleOauth2.finishSignIn(oauth, redirectUri, forged, state).then(() => undefined, (err: Error) => err);
    expect(refused?.message, 'a forged state was accepted').to.include('state mismatch');
    const token = await withSimpleOauth2.finishSignIn(oauth, redirectUri, callback, state);
    expect(token.token.access_token).to.match(/^ho_/);
    expect(token.token.expire_in).to.equal('3600');
    const refreshed = await token.refresh();
    expect(refreshed.token.access_token).to.match(/^ho_/);
  });

  it('runs the curl snippets: authorize URL, the query-string token request, the API, and the 401 without a token', async () => {
    const redirectUri = 'http://localhost:4000/callback';
    const app = await makeApp(server.db, user.id, group.id, { callbackURL: redirectUri });
    const blocks = connectSection()
      .filter((b) => b.lang === 'sh')
      .map((b) => b.code.replaceAll('http://localhost:3000', server.url));
    expect(blocks).to.have.length(3);
    const sh = async (script: string, env: Record<string, string>) =>
      (await run('bash', ['-euo', 'pipefail', '-c', script], { env: { PATH: process.env.PATH!, ...env }, timeout: 15_000 })).stdout;

    const built = new URL((await sh(blocks[0]!, { CLIENT_ID: app.clientId })).trim());
    const state = built.searchParams.get('state')!;
    expect(state).to.match(/^[0-9a-f]{32}$/);
    const callback = await authorizeAs(built, redirectUri);
    expect(callback.searchParams.get('state')).to.equal(state);

    const env = { IDP: server.url, REDIRECT_URI: redirectUri, CLIENT_ID: app.clientId, CLIENT_SECRET: app.clientSecret };
    const token = JSON.parse(await sh(blocks[1]!, { ...env, CODE: callback.searchParams.get('code')! })) as Record<string, string>;
    expect(token, JSON.stringify(token)).to.include({ token_type: 'bearer', scope: 'groups:read-only', expire_in: '3600' });

    // The API's JSON (no trailing newline), then the second command's status code.
    const output = await sh(blocks[2]!, { ...env, TOKEN: token.access_token! });
    expect(output).to.match(/}401\n$/);
    const groups = JSON.parse(output.slice(0, -'401\n'.length)) as { data: { items: Array<{ id: number }> } };
    expect(groups.data.items.map((g) => g.id)).to.deep.equal([group.id]);
  });
});
