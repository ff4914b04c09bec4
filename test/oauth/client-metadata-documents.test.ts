import { expect } from 'chai';
import type { ServerResponse } from 'node:http';
import * as client from 'openid-client';
import { describeEachProfile, listen, useHooks, useIdp, type RunningIdp } from '../helpers/app.js';
import { Browser } from '../helpers/browser.js';
import { makeGroup, makeUser, type TestUser } from '../helpers/factories.js';
import { formAction } from '../helpers/html.js';
import { callbackOf, tokenRequest, withClockAhead } from '../helpers/oauth.js';
import { setClientRegistration } from '../../src/services/client-registration/settings.js';

const CALLBACK = 'http://127.0.0.1:9999/agent/callback';
const CLI = { userId: 0, ip: null, admin: true };

type Answer = (res: ServerResponse, url: string) => void;

/** A site serving clients' metadata documents: each path answers as the test sets it, and every request is counted. */
function useDocumentSite() {
  return useHooks(
    async () => {
      const answers = new Map<string, Answer>();
      const requests: string[] = [];
      const server = await listen((req, res) => {
        requests.push(req.url ?? '');
        const answer = answers.get(req.url ?? '');
        if (!answer) return res.writeHead(404).end();
        answer(res, `${server.url}${req.url}`);
      });
      return { ...server, answers, requests };
    },
    (site) => site.close(),
  );
}

const json = (body: unknown, headers: Record<string, string> = {}): Answer => (res) => {
  res.writeHead(200, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
};

/** The document a client publishes about itself at `url`. */
const documentOf = (url: string, fields: Record<string, unknown> = {}) => ({ client_id: url, client_name: 'Agent CLI', redirect_uris: [CALLBACK], token_endpoint_auth_method: 'none', ...fields });

async function registrationOn(idp: RunningIdp) {
  const owner = await makeUser(idp.db);
  const group = await makeGroup(idp.db, owner.id, { name: 'Agents' });
  await setClientRegistration(idp.db, CLI, { metadataDocuments: true, dynamicRegistration: false, group: group.path });
  return group;
}

/** Opens authorize for `clientId` (PKCE S256) and signs `person` in; the page the flow then shows. */
async function startFlow(idp: RunningIdp, clientId: string, person: TestUser, extra: Record<string, string> = {}) {
  const browser = new Browser(idp.url);
  const verifier = client.randomPKCECodeVerifier();
  const query = new URLSearchParams({
    client_id: clientId, redirect_uri: CALLBACK, response_type: 'code', scope: 'openid groups:read-only', state: 'st',
    code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', ...extra,
  });
  let page = await browser.follow(`/login/oauth/authorize?${query}`, CALLBACK);
  if (page.text.includes('name="password"')) {
    page = await browser.follow(await browser.submit(formAction(page.text, '/login'), { login: person.username, password: person.password }), CALLBACK);
  }
  return { browser, page, verifier };
}

/**
 * Client ID Metadata Documents: an MCP client's client_id is the https URL of a JSON document
 * about itself. The service fetches it (guarded), keeps the client as a public application of the
 * group an administrator chose, and the person is told it was not reviewed. The documents are
 * served over http on 127.0.0.1 here, which CLIENT_METADATA_ALLOW_PRIVATE allows (development and
 * tests); the guards without it are tested below.
 */
describeEachProfile('Client ID Metadata Documents', (profile) => {
  const idp = useIdp(profile, { CLIENT_METADATA_ALLOW_PRIVATE: 'true', RATE_LIMIT_CLIENT_REGISTRATION_IP: '1000/1h' });
  const site = useDocumentSite();
  let person: TestUser;
  let group: { id: number };

  before(async () => {
    person = await makeUser(idp.db);
  });

  it('refuses such a client while an administrator has not turned them on', async () => {
    const url = `${site.url}/off/client.json`;
    site.answers.set('/off/client.json', (res, u) => json(documentOf(u))(res, u));
    const { page } = await startFlow(idp, url, person);
    expect(page.status).to.equal(400);
    expect(page.text).to.include('does not accept clients that register with a metadata document');
    expect(site.requests).not.to.include('/off/client.json');
    expect(await idp.db('oauth_apps').where({ client_id: url }).first()).to.equal(undefined);
  });

  it('runs the whole flow for a client known only by its document: not-reviewed consent, PKCE, tokens, refresh, one fetch', async () => {
    group = await registrationOn(idp);
    const url = `${site.url}/agent/client.json`;
    site.answers.set('/agent/client.json', (res, u) => json(documentOf(u), { 'cache-control': 'max-age=600' })(res, u));
    const { browser, page, verifier } = await startFlow(idp, url, person);
    expect(page.status, page.text.slice(0, 300)).to.equal(200);
    expect(page.text).to.include('data-testid="not-reviewed"');
    expect(page.text).to.include(new URL(url).host);
    expect(page.text).to.include('Agent CLI');
    const back = callbackOf(await browser.follow(await browser.submit(formAction(page.text, '/confirm')), CALLBACK), CALLBACK);

    const config = await client.discovery(new URL(idp.url), url, { token_endpoint_auth_method: 'none' }, client.None(), { execute: [client.allowInsecureRequests] });
    expect(config.serverMetadata().code_challenge_methods_supported).to.deep.equal(['S256']);
    const tokens = await client.authorizationCodeGrant(config, back, { pkceCodeVerifier: verifier, expectedState: 'st' });
    expect(tokens.access_token).to.match(/^ho_/);
    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
    expect(refreshed.access_token).to.match(/^ho_/);

    const row = await idp.db('oauth_apps').where({ client_id: url }).first();
    expect(row).to.include({ group_id: group.id, name: 'Agent CLI', client_type: 'public', registered_by: 'metadata_document', registered_from: new URL(url).host });
    // Kept for its max-age: authorize, the exchange and the refresh fetched it once.
    expect(site.requests.filter((r) => r === '/agent/client.json')).to.have.length(1);
  });

  it('fetches the document again when its time is up, and takes what it says now', async () => {
    const url = `${site.url}/changing/client.json`;
    let name = 'First name';
    site.answers.set('/changing/client.json', (res, u) => json(documentOf(u, { client_name: name }), { 'cache-control': 'max-age=120' })(res, u));
    await startFlow(idp, url, person);
    name = 'Second name';
    const { page } = await withClockAhead(130_000, () => startFlow(idp, url, person));
    expect(page.text).to.include('Second name');
    expect(site.requests.filter((r) => r === '/changing/client.json')).to.have.length(2);
  });

  it('fetches a document once for 16 flows at once that name its client', async () => {
    const url = `${site.url}/crowd/client.json`;
    site.answers.set('/crowd/client.json', (res, u) => setTimeout(() => json(documentOf(u))(res, u), 200));
    // Opening authorize is enough: the document is read before any sign-in.
    const browsers = Array.from({ length: 16 }, () => new Browser(idp.url));
    const query = new URLSearchParams({ client_id: url, redirect_uri: CALLBACK, response_type: 'code', scope: 'groups:read-only', state: 'st', code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256' });
    const pages = await Promise.all(browsers.map((b) => b.follow(`/login/oauth/authorize?${query}`, CALLBACK)));
    expect(pages.map((p) => p.status)).to.deep.equal(Array(16).fill(200));
    expect(pages.every((p) => p.text.includes('name="password"'))).to.equal(true);
    expect(site.requests.filter((r) => r === '/crowd/client.json')).to.have.length(1);
  });

  it('sends nothing to a redirect URI the document does not list', async () => {
    const url = `${site.url}/strict/client.json`;
    site.answers.set('/strict/client.json', (res, u) => json(documentOf(u))(res, u));
    const { page } = await startFlow(idp, url, person, { redirect_uri: 'http://127.0.0.1:9999/elsewhere' });
    expect(page.status).to.equal(400);
    expect(page.headers.get('location')).to.equal(null);
  });

  it('refuses PKCE left out', async () => {
    const url = `${site.url}/agent/client.json`;
    const browser = new Browser(idp.url);
    const query = new URLSearchParams({ client_id: url, redirect_uri: CALLBACK, response_type: 'code', scope: 'groups:read-only', state: 'st' });
    const back = callbackOf(await browser.follow(`/login/oauth/authorize?${query}`, CALLBACK), CALLBACK);
    expect(back.searchParams.get('error')).to.equal('invalid_request');
    expect(back.searchParams.get('error_description')).to.include('PKCE');
  });

  const refused: Array<[string, Answer, string]> = [
    ['a client_id that is not its URL', (res, u) => json(documentOf(`${u}x`))(res, u), "client_id is not the URL it was fetched from"],
    ['a client secret', (res, u) => json(documentOf(u, { client_secret: 'shh' }))(res, u), 'must not hold a client_secret'],
    ['a confidential client', (res, u) => json(documentOf(u, { token_endpoint_auth_method: 'client_secret_basic' }))(res, u), 'token_endpoint_auth_method must be none'],
    ['no redirect URIs', (res, u) => json(documentOf(u, { redirect_uris: [] }))(res, u), 'redirect_uris is empty'],
    ['a localhost redirect URI', (res, u) => json(documentOf(u, { redirect_uris: ['http://localhost:9999/cb'] }))(res, u), 'is http:// on a host other than'],
    ['more than 64 KiB', (res, u) => json(documentOf(u, { padding: 'x'.repeat(70 * 1024) }))(res, u), 'larger than 64 KiB'],
    ['more than 64 KiB without a length', (res, u) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(JSON.stringify(documentOf(u)).slice(0, -1));
      res.end(`, "padding": "${'x'.repeat(70 * 1024)}"}`);
    }, 'larger than 64 KiB'],
    ['something that is not JSON', (res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html>'), 'is not JSON'],
    ['an error status', (res) => res.writeHead(500).end(), 'answered 500'],
  ];
  for (const [what, answer, message] of refused) {
    it(`refuses a document with ${what}, and keeps nothing`, async () => {
      const path = `/bad-${what.replace(/\W+/g, '-')}/client.json`;
      site.answers.set(path, answer);
      const url = `${site.url}${path}`;
      const { page } = await startFlow(idp, url, person);
      expect(page.status).to.equal(400);
      expect(page.text).to.include(message.replace(/'/g, '&#39;'));
      expect(await idp.db('oauth_apps').where({ client_id: url }).first()).to.equal(undefined);
    });
  }

  it('does not follow a redirect, even to a public address', async () => {
    site.answers.set('/moved/client.json', (res) => res.writeHead(302, { location: `${site.url}/agent/client.json` }).end());
    const before = site.requests.filter((r) => r === '/agent/client.json').length;
    const { page } = await startFlow(idp, `${site.url}/moved/client.json`, person);
    expect(page.status).to.equal(400);
    expect(page.text).to.include('a redirect, which is not followed');
    expect(site.requests.filter((r) => r === '/agent/client.json')).to.have.length(before);
  });

  it('gives up on a document that does not come within 5 seconds', async function () {
    this.timeout(15_000);
    site.answers.set('/slow/client.json', () => {});
    const { page } = await startFlow(idp, `${site.url}/slow/client.json`, person);
    expect(page.status).to.equal(400);
    expect(page.text).to.include('no answer within 5 seconds');
  });

  it('answers a token request naming a client whose document cannot be used with invalid_client', async () => {
    site.answers.set('/gone/client.json', (res) => res.writeHead(404).end());
    const res = await tokenRequest(idp.url, { form: { grant_type: 'authorization_code', code: 'x', client_id: `${site.url}/gone/client.json`, redirect_uri: CALLBACK, code_verifier: 'v'.repeat(43) } });
    expect(res.status).to.equal(400);
    expect(res.body.error).to.equal('invalid_client');
  });
});

describeEachProfile('Client ID Metadata Documents: guards', (profile) => {
  describe('without CLIENT_METADATA_ALLOW_PRIVATE', () => {
    const idp = useIdp(profile);
    const site = useDocumentSite();
    let person: TestUser;
    before(async () => {
      person = await makeUser(idp.db);
      await registrationOn(idp);
    });

    it('never fetches from a loopback or private address, by IP or by name', async () => {
      const port = new URL(site.url).port;
      for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, `10.0.0.1:${port}`, `169.254.169.254`]) {
        const { page } = await startFlow(idp, `https://${host}/client.json`, person);
        expect(page.status, host).to.equal(400);
        expect(page.text, host).to.match(/not a public address|resolves to/);
      }
      expect(site.requests).to.have.length(0);
    });

    it('takes an http:// client_id for an application id, not a document', async () => {
      const { page } = await startFlow(idp, `${site.url}/client.json`, person);
      expect(page.status).to.equal(400);
      expect(site.requests).to.have.length(0);
    });
  });

  describe('the limit per address', () => {
    const idp = useIdp(profile, { CLIENT_METADATA_ALLOW_PRIVATE: 'true', RATE_LIMIT_CLIENT_REGISTRATION_IP: '3/1h' });
    const site = useDocumentSite();
    let person: TestUser;
    before(async () => {
      person = await makeUser(idp.db);
      await registrationOn(idp);
    });

    it('counts 16 new clients at once before any is fetched: three are kept, the rest get 429', async () => {
      for (let i = 0; i < 16; i += 1) site.answers.set(`/flood/${i}.json`, (res, u) => json(documentOf(u))(res, u));
      const pages = await Promise.all(Array.from({ length: 16 }, (_, i) => startFlow(idp, `${site.url}/flood/${i}.json`, person).then((r) => r.page)));
      expect(pages.filter((p) => p.status === 429)).to.have.length(13);
      expect(site.requests.filter((r) => r.startsWith('/flood/'))).to.have.length(3);
      expect(Number(((await idp.db('oauth_apps').where({ registered_by: 'metadata_document' }).count({ n: '*' }).first()) as { n: number | string }).n)).to.equal(3);
    });
  });
});
