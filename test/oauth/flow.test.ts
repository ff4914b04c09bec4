import { connect } from 'node:net';
import { expect } from 'chai';
import { isWellFormedToken } from '../../src/tokens.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { Browser } from '../helpers/browser.js';
import { makeClient, type Client } from '../helpers/factories.js';
import { authorize, tokenRequest } from '../helpers/oauth.js';

describeEachProfile('authorization code flow over HTTP', (profile) => {
  const server = useIdp(profile);
  let fixture: Client;

  before(async () => {
    fixture = await makeClient(server.db);
  });

  it('completes authorize → sign in → consent → code → token with the query-string exchange', async () => {
    const callback = await authorize(new Browser(server.url), { ...fixture, state: 'xyz-state' }, fixture.user);
    expect(callback.searchParams.get("error"), callback.toString()).to.equal(null);
    expect(callback.searchParams.get('state')).to.equal('xyz-state');
    expect(callback.searchParams.get('iss')).to.equal(server.url);
    const code = callback.searchParams.get('code')!;
    expect(code).to.be.a('string').with.length.above(20);

    const { status, body, headers } = await tokenRequest(server.url, {
      query: { client_id: fixture.clientId, client_secret: fixture.clientSecret, code, redirect_uri: fixture.redirectUri },
    });
    expect(status, JSON.stringify(body)).to.equal(200);
    expect(headers.get('cache-control')).to.include('no-store');
    expect(body.token_type).to.equal('bearer');
    expect(body.scope).to.equal('groups:read-only');
    expect(body.expire_in).to.equal('3600');
    expect(body.expires_in).to.equal(3600);
    expect(isWellFormedToken(String(body.access_token), 'ho_')).to.equal(true);
    expect(isWellFormedToken(String(body.refresh_token), 'hr_')).to.equal(true);
    expect(body).not.to.have.property('id_token');
  });

  it('exchanges a code sent as `curl -X POST "…?client_id=…"` sends it: no body, no Content-Length', async () => {
    const callback = await authorize(new Browser(server.url), fixture, fixture.user);
    const query = new URLSearchParams({
      client_id: fixture.clientId,
      client_secret: fixture.clientSecret,
      code: callback.searchParams.get('code')!,
      redirect_uri: fixture.redirectUri,
    });
    const { host, port } = new URL(server.url);
    // Written by hand: fetch and node:http would both add a Content-Length: 0.
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), new URL(server.url).hostname);
      let received = '';
      socket.on('data', (chunk) => (received += chunk.toString('utf8')));
      socket.on('end', () => resolve(received));
      socket.on('error', reject);
      socket.write(`POST /login/oauth/access_token?${query} HTTP/1.1\r\nHost: ${host}\r\nAccept: */*\r\nConnection: close\r\n\r\n`);
    });
    expect(raw.split('\r\n')[0], raw).to.equal('HTTP/1.1 200 OK');
    const body = JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4)) as Record<string, unknown>;
    expect(isWellFormedToken(String(body.access_token), 'ho_')).to.equal(true);
  });
});
