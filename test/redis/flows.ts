import { expect } from 'chai';
import { call } from '../helpers/api.js';
import type { RunningIdp } from '../helpers/app.js';
import { Browser, signIn } from '../helpers/browser.js';
import { makeClient, makeUser, type Client } from '../helpers/factories.js';
import { csrfFrom } from '../helpers/html.js';
import { oauthTokens, refresh } from '../helpers/oauth.js';
import { isStorageOutage, outageStore, type RedisClient } from '../../src/storage.js';

/** What the topology suites ask of a service on Redis: the whole token life, and a rate limit. */

const apiStatus = async (idp: RunningIdp, token: string) => (await call(idp, '/apis/v2/user', { token })).status;

/**
 * authorize → sign in → consent → code → token → an API call; the refresh grant, whose new access
 * token works; then the person revokes the application and every token of the grant stops working.
 */
export async function tokenLife(idp: RunningIdp, fixture?: Client): Promise<void> {
  const client = fixture ?? (await makeClient(idp.db));
  const first = await oauthTokens(idp.url, client, client.user);
  expect(await apiStatus(idp, first.accessToken)).to.equal(200);

  const refreshed = await refresh(idp.url, client, first.refreshToken);
  expect(refreshed.status, refreshed.text).to.equal(200);
  const second = { accessToken: String(refreshed.body.access_token), refreshToken: String(refreshed.body.refresh_token) };
  expect(await apiStatus(idp, second.accessToken)).to.equal(200);

  const settings = await signIn(idp.url, client.user);
  const revoked = await settings.submit(`/account/settings/applications/${client.clientId}/revoke`);
  expect(revoked.status).to.equal(302);
  expect(await apiStatus(idp, first.accessToken)).to.equal(401);
  expect(await apiStatus(idp, second.accessToken)).to.equal(401);
  expect((await refresh(idp.url, client, second.refreshToken)).body.error).to.equal('invalid_grant');
}

/** Wrong passwords for one account from one address until the limit `allowed` refuses the next with 429. */
export async function signInLimited(idp: RunningIdp, allowed: number): Promise<void> {
  const user = await makeUser(idp.db);
  const visitor = new Browser(idp.url);
  const attempt = async () => {
    const form = await visitor.get('/login');
    return visitor.postForm('/login', { _csrf: csrfFrom(form.text), login: user.username, password: 'not the password' });
  };
  for (let i = 0; i < allowed; i += 1) expect((await attempt()).status).to.equal(401);
  expect((await attempt()).status).to.equal(429);
}

/**
 * A command to a topology that cannot serve it (no node answers, no master named) fails within
 * the client's timeout as a Redis outage (a 503 in the service), instead of waiting in a queue.
 */
export async function expectFailsAsRedisOutage(away: RedisClient): Promise<void> {
  away.on('error', () => {});
  try {
    const err = await away.set('k', 'v').then(() => undefined, (e: unknown) => e);
    expect(err, 'the command succeeded').to.be.instanceOf(Error);
    expect(isStorageOutage(err), String(err)).to.equal(true);
    expect(outageStore(err)).to.equal('redis');
  } finally {
    away.disconnect();
  }
}
