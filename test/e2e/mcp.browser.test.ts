import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InvalidTokenError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js';
import { getOAuthProtectedResourceMetadataUrl } from '@modelcontextprotocol/sdk/server/auth/router.js';
import { createMcpExpressApp } from '@modelcontextprotocol/sdk/server/express.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { describeEachProfile, listen, useHooks, useIdp } from '../helpers/app.js';
import { Browser } from '../helpers/browser.js';
import { groupAccess, makeGroup, makeUser, type TestUser } from '../helpers/factories.js';
import { formAction } from '../helpers/html.js';
import { basicAuth, callbackOf, tokenRequest, withClockAhead } from '../helpers/oauth.js';
import { createResource } from '../../src/services/resources/manage.js';
import { setClientRegistration } from '../../src/services/client-registration/settings.js';
import { useChromium } from './support.js';

const CLI = { userId: 0, ip: null, admin: true };

/**
 * A test CA and a certificate for 127.0.0.1 signed by it (openssl, from Debian), for the site that
 * serves the MCP client's metadata document over https: the SDK takes only an https document URL.
 * The service trusts the CA through CLIENT_METADATA_CA_FILE, as an operator trusts a company CA.
 */
function makeTlsFiles() {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-tls-'));
  const run = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  run('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '1', '-subj', '/CN=Horizon ID test CA');
  run('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'site.key', '-out', 'site.csr', '-subj', '/CN=127.0.0.1');
  writeFileSync(join(dir, 'san.ext'), 'subjectAltName=IP:127.0.0.1\n');
  run('x509', '-req', '-in', 'site.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'site.pem', '-days', '1', '-extfile', 'san.ext');
  return { dir, ca: join(dir, 'ca.pem'), key: readFileSync(join(dir, 'site.key')), cert: readFileSync(join(dir, 'site.pem')) };
}

/** The MCP client's side of OAuth, kept in memory: what a desktop agent keeps in its settings. */
class MemoryAuthProvider implements OAuthClientProvider {
  client?: OAuthClientInformationMixed;
  saved?: OAuthTokens;
  verifier = '';
  authorizationUrl?: URL;
  refreshes = 0;

  constructor(readonly redirectUrl: string, readonly clientMetadataUrl?: string) {}

  get clientMetadata(): OAuthClientMetadata {
    return { client_name: 'Test agent', redirect_uris: [this.redirectUrl], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' };
  }
  clientInformation() { return this.client; }
  saveClientInformation(info: OAuthClientInformationMixed) { this.client = info; }
  tokens() { return this.saved; }
  saveTokens(tokens: OAuthTokens) {
    if (this.saved) this.refreshes += 1;
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) { this.authorizationUrl = url; }
  saveCodeVerifier(verifier: string) { this.verifier = verifier; }
  codeVerifier() { return this.verifier; }
}

/**
 * Horizon ID in front of an MCP server, end to end with the official MCP TypeScript SDK: the SDK's
 * server (its bearer-auth middleware checking each token at the introspection endpoint with the
 * resource's own credentials, and serving the resource's published metadata); the SDK's client
 * with its OAuth provider discovers the server and the authorization server, registers (once with
 * a Client ID Metadata Document, once by Dynamic Client Registration), sends the person to sign in
 * and authorize in Chromium, calls a tool, refreshes, and a token minted for another resource is
 * refused by the server.
 */
describeEachProfile('MCP authorization with the official MCP SDK', function (profile) {
  this.timeout(120_000);
  const tls = useHooks(async () => makeTlsFiles(), async (files) => rmSync(files.dir, { recursive: true, force: true }));
  const idp = useIdp(profile, () => ({ CLIENT_METADATA_ALLOW_PRIVATE: 'true', CLIENT_METADATA_CA_FILE: tls.ca }));
  const chromium = useChromium();
  let person: TestUser;
  let mcpUrl: URL;
  let other: { identifier: string };
  let closeServer: () => Promise<void>;
  let documentSite: { url: string; close: () => Promise<void> };
  // Where the agent's browser comes back: the agent only needs the code from the URL.
  const callbacks = useHooks(async () => listen((_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('You can close this window.')), (s) => s.close());

  before(async () => {
    person = await makeUser(idp.db);
    const owner = await makeUser(idp.db);
    const tools = await makeGroup(idp.db, owner.id, { name: 'Tools team' });
    const agents = await makeGroup(idp.db, owner.id, { name: 'Agents' });
    await setClientRegistration(idp.db, CLI, { metadataDocuments: true, dynamicRegistration: true, group: agents.path });

    // The MCP server: its identifier is where it listens.
    const app = createMcpExpressApp({ host: '127.0.0.1' });
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    mcpUrl = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`);
    closeServer = () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); });
    const access = await groupAccess(idp.db, owner.id, tools.id);
    const { resource, secret } = await createResource({ db: idp.db, issuer: idp.url }, access, {
      identifier: mcpUrl.href, name: 'Build tools', scopes: [{ name: 'tools:read', description: 'List and run the read-only build tools' }],
    });
    other = (await createResource({ db: idp.db, issuer: idp.url }, access, { identifier: 'https://other.example.com/mcp', name: 'Other', scopes: [{ name: 'other:read', description: 'Read the other' }] })).resource;

    // The metadata the service publishes for the resource, served where RFC 9728 puts it.
    const published = await (await fetch(`${idp.url}/login/oauth/resource-metadata?resource=${encodeURIComponent(mcpUrl.href)}`)).json();
    app.get(new URL(getOAuthProtectedResourceMetadataUrl(mcpUrl)).pathname, (_req, res) => { res.json(published); });
    const verifier = {
      async verifyAccessToken(token: string) {
        const answer = await fetch(`${idp.url}/login/oauth/introspect`, {
          method: 'POST',
          headers: { authorization: basicAuth(resource.clientId, secret), 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ token }),
        });
        const seen = (await answer.json()) as { active: boolean; client_id: string; scope?: string; exp: number; aud: string; sub: string };
        if (!seen.active) throw new InvalidTokenError('the token is not active for this server');
        return { token, clientId: seen.client_id, scopes: (seen.scope ?? '').split(' '), expiresAt: seen.exp, resource: new URL(seen.aud), extra: { sub: seen.sub } };
      },
    };
    app.post(mcpUrl.pathname, requireBearerAuth({ verifier, requiredScopes: ['tools:read'], resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(mcpUrl), expectedResource: mcpUrl }), async (req, res) => {
      const mcp = new McpServer({ name: 'build-tools', version: '1.0.0' });
      mcp.registerTool('whoami', { description: 'Who the token speaks for' }, (extra) => ({
        content: [{ type: 'text', text: JSON.stringify({ sub: extra.authInfo?.extra?.sub, client: extra.authInfo?.clientId, scopes: extra.authInfo?.scopes }) }],
      }));
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      res.on('close', () => { void transport.close(); void mcp.close(); });
      await mcp.connect(transport);
      await transport.handleRequest(req, res, req.body);
    });

    // The site that publishes the agent's metadata document (https, signed by the test CA).
    const https = createHttpsServer({ key: tls.key, cert: tls.cert }, (req, res) => {
      if (req.url !== '/agent.json') return res.writeHead(404).end();
      const clientId = `${documentSite.url}/agent.json`;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ client_id: clientId, client_name: 'Test agent (metadata document)', redirect_uris: [`${callbacks.url}/callback`], token_endpoint_auth_method: 'none' }));
    });
    https.listen(0, '127.0.0.1');
    await new Promise((resolve) => https.once('listening', resolve));
    documentSite = { url: `https://127.0.0.1:${(https.address() as AddressInfo).port}`, close: () => new Promise((resolve) => { https.closeAllConnections(); https.close(() => resolve()); }) };
  });

  after(async () => {
    await closeServer?.();
    await documentSite?.close();
  });

  /** The person, in Chromium, at the authorization URL the SDK made: signs in, reads the consent page, authorizes; the code the agent gets back. */
  async function approveInChromium(url: URL, expectFrom: string): Promise<string> {
    const page = await chromium.newPage();
    await page.goto(url.href);
    await page.getByLabel('Username or email').fill(person.username);
    await page.getByLabel('Password').fill(person.password);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByTestId('not-reviewed').waitFor();
    expect(await page.getByTestId('registered-from').textContent()).to.equal(expectFrom);
    expect(await page.getByTestId('resource-name').textContent()).to.equal('Build tools');
    expect(await page.getByTestId('resource-scopes').textContent()).to.include('List and run the read-only build tools');
    await Promise.all([page.waitForURL((u) => u.href.startsWith(callbacks.url)), page.getByRole('button', { name: 'Authorize' }).click()]);
    const code = new URL(page.url()).searchParams.get('code');
    expect(code, page.url()).to.be.a('string');
    return code!;
  }

  /** Connects the SDK's client; the first attempt meets the 401, registers and sends the person to authorize. */
  async function connect(auth: MemoryAuthProvider, expectFrom: string) {
    const first = new Client({ name: 'test-agent', version: '1.0.0' });
    let refused: unknown;
    await first.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: auth })).catch((err: unknown) => { refused = err; });
    expect(String(refused)).to.match(/Unauthorized/);
    expect(auth.authorizationUrl, 'the SDK sent the person to authorize').to.not.equal(undefined);
    const sent = auth.authorizationUrl!;
    expect(sent.searchParams.get('resource')).to.equal(mcpUrl.href);
    expect(sent.searchParams.get('code_challenge_method')).to.equal('S256');
    expect(sent.searchParams.get('scope')).to.equal('tools:read');
    const code = await approveInChromium(sent, expectFrom);
    const transport = new StreamableHTTPClientTransport(mcpUrl, { authProvider: auth });
    await transport.finishAuth(code);
    const client = new Client({ name: 'test-agent', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: auth }));
    return client;
  }

  async function whoami(client: Client) {
    const result = await client.callTool({ name: 'whoami' });
    return JSON.parse((result.content as Array<{ text: string }>)[0]!.text) as { sub: string; client: string; scopes: string[] };
  }

  /** A token of the same person and client for another resource, minted the plain way (authorize → consent → exchange). */
  async function tokenForOtherResource(clientId: string): Promise<string> {
    const browser = new Browser(idp.url);
    const verifier = 'v'.repeat(50);
    const challenge = Buffer.from(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))).toString('base64url');
    const redirectUri = `${callbacks.url}/callback`;
    const query = new URLSearchParams({ client_id: clientId, redirect_uri: redirectUri, response_type: 'code', scope: 'other:read', resource: other.identifier, state: 's', code_challenge: challenge, code_challenge_method: 'S256' });
    let page = await browser.follow(`/login/oauth/authorize?${query}`, redirectUri);
    page = await browser.follow(await browser.submit(formAction(page.text, '/login'), { login: person.username, password: person.password }), redirectUri);
    const back = callbackOf(await browser.follow(await browser.submit(formAction(page.text, '/confirm')), redirectUri), redirectUri);
    const res = await tokenRequest(idp.url, { form: { grant_type: 'authorization_code', code: back.searchParams.get('code')!, client_id: clientId, redirect_uri: redirectUri, code_verifier: verifier, resource: other.identifier } });
    expect(res.status, res.text).to.equal(200);
    return String(res.body.access_token);
  }

  for (const way of ['metadata document', 'dynamic registration'] as const) {
    it(`registers by ${way}, is approved in Chromium, calls a tool, refreshes, and another resource's token is refused`, async () => {
      const documentUrl = way === 'metadata document' ? `${documentSite.url}/agent.json` : undefined;
      const auth = new MemoryAuthProvider(`${callbacks.url}/callback`, documentUrl);
      const client = await connect(auth, documentUrl ? new URL(documentUrl).host : '127.0.0.1');
      const clientId = (auth.client as { client_id: string }).client_id;
      if (documentUrl) expect(clientId).to.equal(documentUrl);
      else expect(clientId).to.match(/^[0-9a-f]{20}$/);
      const row = await idp.db('oauth_apps').where({ client_id: clientId }).first();
      expect(row.registered_by).to.equal(documentUrl ? 'metadata_document' : 'dynamic');

      expect(await whoami(client)).to.deep.equal({ sub: String(person.id), client: clientId, scopes: ['tools:read'] });

      // An hour later the access token has expired: the SDK meets the 401, refreshes with its refresh token, and the call goes through.
      const before = auth.saved!.access_token;
      expect(await withClockAhead(3700_000, () => whoami(client))).to.include({ sub: String(person.id) });
      expect(auth.refreshes).to.equal(1);
      expect(auth.saved!.access_token).not.to.equal(before);
      await client.close();

      const wrong = await tokenForOtherResource(clientId);
      const refused = await fetch(mcpUrl, { method: 'POST', headers: { authorization: `Bearer ${wrong}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) });
      expect(refused.status).to.equal(401);
      expect(refused.headers.get('www-authenticate')).to.include('invalid_token');
    });
  }
});
