import { request } from 'node:http';
import { expect } from 'chai';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { Browser } from '../helpers/browser.js';
import { makeClient } from '../helpers/factories.js';
import { authorize } from '../helpers/oauth.js';

const REDIRECT_URI = 'http://localhost:9999/seed-client/callback';

/**
 * A POST exactly as the curl flow of docs/oauth.md writes it: the four parameters in the query string, no body, no
 * Content-Type, no Authorization header. node:http rather than fetch, so nothing is added.
 */
function postWithQueryOnly(url: string): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST' }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * A client written from the curl flow of docs/oauth.md alone: authorize with client_id, redirect_uri, scope and state
 * (nothing else: no response_type, no PKCE), then the token exchange with client_id,
 * client_secret, code and redirect_uri in the query string, then the API.
 */
describeEachProfile("a hand-written client that speaks only the curl flow of docs/oauth.md", (profile) => {
  const server = useIdp(profile);

  it('exchanges the code with the four query parameters and lists groups with the token', async () => {
    const app = await makeClient(server.db, { redirectUri: REDIRECT_URI });

    const callback = await authorize(new Browser(server.url), { ...app, scope: 'groups:read-only', state: 'a-non-guessable-state' }, app.user);
    expect(callback.searchParams.get('state')).to.equal('a-non-guessable-state');
    const code = callback.searchParams.get('code')!;

    const query = new URLSearchParams({ client_id: app.clientId, client_secret: app.clientSecret, code, redirect_uri: REDIRECT_URI });
    const res = await postWithQueryOnly(`${server.url}/login/oauth/access_token?${query}`);
    expect(res.status, res.body).to.equal(200);
    expect(res.headers['content-type']).to.match(/^application\/json/);
    expect(res.headers['cache-control']).to.include('no-store');
    const token = JSON.parse(res.body) as Record<string, unknown>;
    expect(token.access_token).to.be.a('string').and.match(/^ho_[0-9A-Za-z]{36}$/);
    expect(token.token_type).to.equal('bearer');
    expect(token.scope).to.equal('groups:read-only');
    expect(token.expire_in).to.equal('3600');

    const groups = await fetch(`${server.url}/apis/v2/groups?pageNumber=1&pageSize=50`, {
      headers: { Authorization: `Bearer ${token.access_token as string}` },
    });
    expect(groups.status).to.equal(200);
    const body = (await groups.json()) as { data: { total: number; items: Array<{ id: number; path: string }> } };
    expect(body.data.total).to.equal(1);
    expect(body.data.items.map((g) => g.path)).to.deep.equal([app.group.path]);
  });

  it('refuses the same code a second time', async () => {
    const app = await makeClient(server.db, { redirectUri: REDIRECT_URI });
    const callback = await authorize(new Browser(server.url), app, app.user);
    const query = new URLSearchParams({ client_id: app.clientId, client_secret: app.clientSecret, code: callback.searchParams.get('code')!, redirect_uri: REDIRECT_URI });
    expect((await postWithQueryOnly(`${server.url}/login/oauth/access_token?${query}`)).status).to.equal(200);
    const again = await postWithQueryOnly(`${server.url}/login/oauth/access_token?${query}`);
    expect(again.status).to.equal(400);
    expect(JSON.parse(again.body)).to.include({ error: 'invalid_grant' });
  });
});
