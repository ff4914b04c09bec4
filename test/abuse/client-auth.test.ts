import { expect } from 'chai';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { makeApp, makeClient, makeGroup, makeUser } from '../helpers/factories.js';
import { basicAuth, tokenRequest } from '../helpers/oauth.js';

/**
 * Failed client authentications are counted per client_id and client address. A client_id is
 * public (it is in every authorization URL), so a stranger's wrong secrets must never refuse the
 * application's own server. Addresses come from X-Forwarded-For (TRUST_PROXY=1).
 */
describeEachProfile('failed client authentication, per client_id and address', (profile) => {
  const idp = useIdp(profile, { TRUST_PROXY: '1' });
  /** A refresh with an unknown refresh token: past client authentication it is invalid_grant, so the answer says whether the client got in. */
  const from = (address: string, clientId: string, secret: string) =>
    tokenRequest(idp.url, {
      form: { grant_type: 'refresh_token', refresh_token: 'hr_unknown' },
      headers: { authorization: basicAuth(clientId, secret), 'x-forwarded-for': address },
    });

  it('refuses the address that sent ten wrong secrets, and not the right secret from another address', async () => {
    const app = await makeClient(idp.db);
    for (let i = 0; i < 10; i += 1) expect((await from('203.0.113.10', app.clientId, 'hs_wrong')).body.error).to.equal('invalid_client');
    const limited = await from('203.0.113.10', app.clientId, app.clientSecret);
    expect(limited.status).to.equal(429);
    expect(limited.body.error).to.equal('rate_limited');
    expect(Number(limited.headers.get('retry-after'))).to.be.within(1, 60);
    // The application's server, elsewhere, authenticates: its refresh token is what is wrong.
    const server = await from('198.51.100.20', app.clientId, app.clientSecret);
    expect(server.status, server.text).to.equal(400);
    expect(server.body.error).to.equal('invalid_grant');
    // And the first address is still limited.
    expect((await from('203.0.113.10', app.clientId, app.clientSecret)).status).to.equal(429);
  });

  it('takes the point before the secret is compared: of 60 wrong secrets sent at once from one address, at most 10 are compared', async () => {
    const app = await makeClient(idp.db);
    const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => from(`2001:db8:5::${i + 1}`, app.clientId, `hs_wrong${i}`)));
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 401).length, statuses.join(' ')).to.be.within(1, 10);
    expect(statuses.filter((s) => s !== 401).every((s) => s === 429), statuses.join(' ')).to.equal(true);
  });

  it('lets a server send 40 requests at once with its right secret: none is refused for its own requests in flight', async () => {
    const app = await makeClient(idp.db);
    const answers = await Promise.all(Array.from({ length: 40 }, () => from('203.0.113.40', app.clientId, app.clientSecret)));
    const errors = answers.map((a) => a.body.error);
    expect(errors.every((e) => e === 'invalid_grant'), errors.join(' ')).to.equal(true);
  });

  it('never refuses a public client, which has no secret: secrets sent for its client_id are not held against it', async () => {
    const user = await makeUser(idp.db);
    const group = await makeGroup(idp.db, user.id);
    const { clientId } = await makeApp(idp.db, user.id, group.id, { callbackURL: 'http://127.0.0.1:9999/native/callback', type: 'public' });
    for (let i = 0; i < 12; i += 1) expect((await from('203.0.113.30', clientId, 'hs_anything')).status).to.be.oneOf([401, 429]);
    const own = await tokenRequest(idp.url, {
      form: { grant_type: 'refresh_token', refresh_token: 'hr_unknown', client_id: clientId },
      headers: { 'x-forwarded-for': '203.0.113.30' },
    });
    expect(own.status, own.text).to.equal(400);
    expect(own.body.error).to.equal('invalid_grant');
  });
});
