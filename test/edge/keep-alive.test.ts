import { expect } from 'chai';
import http from 'node:http';
import { describeEachProfile, useIdp } from '../helpers/app.js';

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** Whether the request went over a connection an earlier request had used. */
  reusedSocket: boolean;
}

/** One request through `agent`, body written in full, response read to the end. */
function send(agent: http.Agent, url: string, options: { method?: string; headers?: Record<string, string>; body?: Buffer | string } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { agent, method: options.method ?? 'GET', headers: options.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString(), reusedSocket: req.reusedSocket }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

/** An answer given before the body was read leaves a keep-alive connection usable for the next request. */
describeEachProfile('early answers and keep-alive connections', (profile) => {
  const server = useIdp(profile);
  let agent: http.Agent;

  beforeEach(() => {
    agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  });
  afterEach(() => agent.destroy());

  /** The early answer, then a second request that must succeed on the same agent. */
  async function thenHealthz(_first: Answer): Promise<Answer> {
    const next = await send(agent, `${server.url}/healthz`);
    expect(next.status, next.body).to.equal(200);
    return next;
  }

  const form = (size: number) => `client_id=x&code=${'a'.repeat(size)}`;

  it('serves the next request on the same connection after the token endpoint\'s 413', async () => {
    const first = await send(agent, `${server.url}/login/oauth/access_token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form(512 * 1024),
    });
    expect(first.status).to.equal(413);
    expect((await thenHealthz(first)).reusedSocket).to.equal(true);
  });

  it('serves the next request after a 413 on a chunked token request body', async () => {
    const first = await send(agent, `${server.url}/login/oauth/access_token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'transfer-encoding': 'chunked' },
      body: form(512 * 1024),
    });
    expect(first.status).to.equal(413);
    await thenHealthz(first);
  });

  it('says Connection: close on a 413 for a body too large to drain, and the next request works', async () => {
    const first = await send(agent, `${server.url}/login/oauth/access_token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form(3 * 1024 * 1024),
    });
    expect(first.status).to.equal(413);
    expect(first.headers.connection).to.equal('close');
    await thenHealthz(first);
  });

  it('serves the next request on the same connection after the API\'s 401 to a request with a body', async () => {
    const first = await send(agent, `${server.url}/apis/v2/groups/1/oauth-apps`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'x'.repeat(30_000) }),
    });
    expect(first.status).to.equal(401);
    expect((await thenHealthz(first)).reusedSocket).to.equal(true);
  });

  it('serves the next request on the same connection after the API\'s 415', async () => {
    const first = await send(agent, `${server.url}/apis/v2/groups/1/oauth-apps`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain', authorization: 'Bearer ha_x' },
      body: 'x'.repeat(30_000),
    });
    expect([401, 415]).to.include(first.status);
    expect((await thenHealthz(first)).reusedSocket).to.equal(true);
  });

  it('serves the next request on the same connection after a page\'s 413', async () => {
    const first = await send(agent, `${server.url}/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `login=${'x'.repeat(100 * 1024)}`,
    });
    expect(first.status).to.equal(413);
    expect((await thenHealthz(first)).reusedSocket).to.equal(true);
  });
});

/**
 * A request head Node's parser refuses (over 16 KiB) is answered 431, not reset: from Node 24 on,
 * Node's own answer destroys the socket with the rest of the request unread, and the client sees
 * ECONNRESET instead of the status.
 */
describe('a request head too large to read', () => {
  const server = useIdp('sqlite');
  const huge = `/login/oauth/jwks?b${'b'.repeat(70_000)}=1`;

  it('is answered 431 on a kept-alive connection, and the next request opens a new one', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      expect((await send(agent, `${server.url}/healthz`)).status).to.equal(200);
      const refused = await send(agent, `${server.url}${huge}`);
      expect(refused.status).to.equal(431);
      expect(refused.headers.connection).to.equal('close');
      expect((await send(agent, `${server.url}/healthz`)).status).to.equal(200);
    } finally {
      agent.destroy();
    }
  });

  it('is answered 431 to 32 clients at once, each on its own connection, with a body still being sent', async () => {
    const answers = await Promise.all(
      Array.from({ length: 32 }, () =>
        send(new http.Agent({ keepAlive: false }), `${server.url}${huge}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'x'.repeat(64 * 1024) }),
      ),
    );
    expect(answers.map((a) => a.status)).to.deep.equal(Array(32).fill(431));
  });
});
