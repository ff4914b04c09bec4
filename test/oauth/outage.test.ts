import { expect } from 'chai';
import { useIdp } from '../helpers/app.js';
import { CALLBACK, makeClient, type Client } from '../helpers/factories.js';
import { tokenRequest } from '../helpers/oauth.js';

/** Redis unreachable (nothing listens on the port): token requests answer 503, and /readyz says why. */
describe('storage outage', () => {
  const server = useIdp('sqlite', { REDIS_URL: 'redis://127.0.0.1:1/0' });
  let app: Client;

  before(async () => {
    app = await makeClient(server.db);
  });

  it('answers a token request with 503 temporarily_unavailable, not a 500', async () => {
    const { status, body, headers } = await tokenRequest(server.url, {
      query: { client_id: app.clientId, client_secret: app.clientSecret, code: 'a-code-that-would-be-looked-up-in-redis', redirect_uri: CALLBACK },
    });
    expect(status).to.equal(503);
    expect(body).to.deep.equal({ error: 'temporarily_unavailable', error_description: 'storage is unreachable; try again shortly' });
    expect(headers.get('retry-after')).to.equal('5');
  });

  it('reports not ready on /readyz, naming Redis, while /healthz stays up', async () => {
    const ready = await fetch(`${server.url}/readyz`);
    expect(ready.status).to.equal(503);
    expect(await ready.json()).to.deep.include({ checks: { database: 'ok', redis: 'unreachable' } });
    expect((await fetch(`${server.url}/healthz`)).status).to.equal(200);
  });
});
