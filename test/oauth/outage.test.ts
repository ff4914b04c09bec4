import { expect } from 'chai';
import { startIdp, type RunningIdp } from '../helpers/app.js';
import { makeApp, makeGroup, makeUser } from '../helpers/factories.js';
import { exchangeCode } from '../helpers/oauth.js';

/** Redis unreachable (nothing listens on the port): token requests answer 503, and /readyz says why. */
describe('storage outage', () => {
  let server: RunningIdp;
  let app: Awaited<ReturnType<typeof makeApp>>;

  before(async () => {
    server = await startIdp('sqlite', { REDIS_URL: 'redis://127.0.0.1:1/0' });
    const user = await makeUser(server.idp.db);
    const group = await makeGroup(server.idp.db, user.id);
    app = await makeApp(server.idp.db, user.id, group.id);
  });
  after(() => server.stop());

  it('answers a token request with 503 temporarily_unavailable, not a 500', async () => {
    const { status, body, headers } = await exchangeCode(server.url, {
      client_id: app.clientId,
      client_secret: app.clientSecret,
      code: 'a-code-that-would-be-looked-up-in-redis',
      redirect_uri: 'http://127.0.0.1:9999/callback',
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
