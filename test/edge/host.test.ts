import { expect } from 'chai';
import http from 'node:http';
import { describeEachProfile, useIdp } from '../helpers/app.js';

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A request whose Host (and other headers) the test chooses; fetch will not send another Host. */
function get(url: string, headers: Record<string, string>, options: { method?: string; body?: string; agent?: http.Agent } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: options.method ?? 'GET', headers, agent: options.agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

const DISCOVERY = '/.well-known/openid-configuration';

describeEachProfile('the Host allow-list and URLs built from ISSUER', (profile) => {
  const server = useIdp(profile);
  const port = () => new URL(server.url).port;

  it('answers a request naming another Host with 421 and no content', async () => {
    const res = await get(`${server.url}${DISCOVERY}`, { host: 'evil.example' });
    expect(res.status).to.equal(421);
    expect(res.body).to.equal('');
  });

  it('answers another port of the issuer\'s host with 421', async () => {
    const res = await get(`${server.url}${DISCOVERY}`, { host: '127.0.0.1:1' });
    expect(res.status).to.equal(421);
  });

  it('answers a page, the API and the token endpoint naming another Host with 421', async () => {
    for (const [method, path] of [['GET', '/login'], ['GET', '/apis/v2/user'], ['POST', '/login/oauth/access_token']] as const) {
      const res = await get(`${server.url}${path}`, { host: 'evil.example' }, { method });
      expect(res.status, `${method} ${path}`).to.equal(421);
    }
  });

  it('answers /healthz and /readyz whatever the Host', async () => {
    expect((await get(`${server.url}/healthz`, { host: 'lb-probe.internal' })).status).to.equal(200);
    expect((await get(`${server.url}/readyz`, { host: 'lb-probe.internal' })).status).to.equal(200);
  });

  it('counts localhost and [::1] on the issuer\'s port as the loopback issuer\'s host', async () => {
    expect((await get(`${server.url}${DISCOVERY}`, { host: `localhost:${port()}` })).status).to.equal(200);
    expect((await get(`${server.url}${DISCOVERY}`, { host: `[::1]:${port()}` })).status).to.equal(200);
  });

  it('builds discovery from ISSUER when the request names a loopback alias', async () => {
    const res = await get(`${server.url}${DISCOVERY}`, { host: `localhost:${port()}` });
    const doc = JSON.parse(res.body) as Record<string, string>;
    expect(doc.token_endpoint).to.equal(`${server.url}/login/oauth/access_token`);
    expect(doc.authorization_endpoint).to.equal(`${server.url}/login/oauth/authorize`);
    expect(doc.jwks_uri).to.equal(`${server.url}/login/oauth/jwks`);
  });

  it('builds discovery from ISSUER whatever X-Forwarded-Proto and X-Forwarded-Host say', async () => {
    const res = await get(`${server.url}${DISCOVERY}`, { host: `127.0.0.1:${port()}`, 'x-forwarded-proto': 'https', 'x-forwarded-host': `127.0.0.1:${port()}` });
    expect(JSON.parse(res.body).token_endpoint).to.equal(`${server.url}/login/oauth/access_token`);
  });

  it('ignores X-Forwarded-Host from an untrusted client (TRUST_PROXY=0)', async () => {
    const res = await get(`${server.url}${DISCOVERY}`, { host: `127.0.0.1:${port()}`, 'x-forwarded-host': 'evil.example' });
    expect(res.status).to.equal(200);
  });

  it('serves the next request on the same keep-alive connection after a 421 to a request with a body', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const first = await get(`${server.url}/login/oauth/access_token`, { host: 'evil.example', 'content-type': 'application/x-www-form-urlencoded' }, { method: 'POST', body: 'x'.repeat(200_000), agent });
      expect(first.status).to.equal(421);
      const next = await get(`${server.url}/healthz`, {}, { agent });
      expect(next.status).to.equal(200);
    } finally {
      agent.destroy();
    }
  });
});

describeEachProfile('the Host behind a trusted proxy', (profile) => {
  const server = useIdp(profile, { TRUST_PROXY: '1' });

  it('checks the X-Forwarded-Host of a trusted proxy', async () => {
    const res = await get(`${server.url}${DISCOVERY}`, { host: new URL(server.url).host, 'x-forwarded-host': 'evil.example' });
    expect(res.status).to.equal(421);
  });

  it('accepts the issuer\'s host forwarded by a trusted proxy whose own Host is an internal name', async () => {
    const res = await get(`${server.url}${DISCOVERY}`, { host: 'idp-upstream:3000', 'x-forwarded-host': new URL(server.url).host, 'x-forwarded-proto': 'https' });
    expect(res.status).to.equal(200);
    expect(JSON.parse(res.body).issuer).to.equal(server.url);
  });
});

describeEachProfile('an https ISSUER behind a TLS-terminating proxy', (profile) => {
  const server = useIdp(profile, { ISSUER: 'https://idp.example' });

  const local = (path: string) => `${server.local}${path}`;

  it('writes https URLs of the issuer in discovery though the hop to it is plain http', async () => {
    const res = await get(local(DISCOVERY), { host: 'idp.example' });
    expect(res.status).to.equal(200);
    expect(JSON.parse(res.body).token_endpoint).to.equal('https://idp.example/login/oauth/access_token');
  });

  it('counts the default port as the issuer\'s host', async () => {
    expect((await get(local(DISCOVERY), { host: 'idp.example:443' })).status).to.equal(200);
  });

  it('refuses a loopback Host for a public ISSUER', async () => {
    expect((await get(local(DISCOVERY), { host: 'localhost' })).status).to.equal(421);
  });

  it('serves a page that sets Secure cookies', async () => {
    const res = await get(local('/login'), { host: 'idp.example' });
    expect(res.status).to.equal(200);
    const cookies = res.headers['set-cookie'] ?? [];
    expect(cookies).to.have.length.above(0);
    for (const cookie of cookies) expect(cookie).to.match(/; secure/i);
  });
});
