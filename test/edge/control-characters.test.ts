import { expect } from 'chai';
import type { GroupRow } from '../../src/db/groups.js';
import { call, expectApiError } from '../helpers/api.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { signIn, visit } from '../helpers/browser.js';
import { makeClient, personalToken, type Client, type TestUser } from '../helpers/factories.js';
import { errorMessage } from '../helpers/html.js';

/** Control characters are refused where a request enters, naming the field, before storage sees them. */
describeEachProfile('control characters at the edge', (profile) => {
  const server = useIdp(profile);
  let owner: TestUser;
  let group: GroupRow;
  let app: Client;
  let token: string;

  before(async () => {
    app = await makeClient(server.db);
    ({ user: owner, group } = app);
    token = await personalToken(server.db, owner.id, { scopes: ['groups:read-write'] });
  });

  async function oauthError(res: Response): Promise<string> {
    const body = (await res.json()) as { error: string; error_description: string };
    expect(res.status, JSON.stringify(body)).to.equal(400);
    expect(body.error).to.equal('invalid_request');
    return body.error_description;
  }

  describe('OAuth endpoints', () => {
    it('refuses a null byte in client_id at authorize with invalid_request naming client_id', async () => {
      const res = await fetch(`${server.url}/login/oauth/authorize?client_id=${app.clientId}%00&redirect_uri=x&state=s`, { redirect: 'manual' });
      expect(await oauthError(res)).to.equal('client_id must not contain control characters');
    });

    it('refuses a control character in a token request form field with invalid_request naming it', async () => {
      const res = await fetch(`${server.url}/login/oauth/access_token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ client_id: app.clientId, client_secret: app.clientSecret, code: 'abc\u0000', redirect_uri: 'x' }).toString(),
      });
      expect(await oauthError(res)).to.equal('code must not contain control characters');
    });

    it('refuses a control character in the token request query string with invalid_request naming it', async () => {
      const query = new URLSearchParams({ client_id: app.clientId, client_secret: 'x\u0007y', code: 'c', redirect_uri: 'x' });
      const res = await fetch(`${server.url}/login/oauth/access_token?${query}`, { method: 'POST' });
      expect(await oauthError(res)).to.equal('client_secret must not contain control characters');
    });

    it('refuses a control character in the revocation request body with invalid_request naming it', async () => {
      const res = await fetch(`${server.url}/login/oauth/revoke`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${app.clientId}:${app.clientSecret}`).toString('base64')}`,
        },
        body: 'token=ho_%0Aabc',
      });
      expect(await oauthError(res)).to.equal('token must not contain control characters');
    });
  });

  describe('the API', () => {
    it('refuses a null byte in a query parameter with the API error naming it', async () => {
      const res = await call(server, '/apis/v2/groups?filter=a%00b', { token });
      expectApiError(res, 400, 'invalid_request');
      expect(res.body.error_description).to.equal('filter must not contain control characters');
    });

    it('refuses a control character in a path segment with the API error naming the path', async () => {
      const res = await call(server, '/apis/v2/oauth-apps/abc%01def', { token });
      expectApiError(res, 400, 'invalid_request');
      expect(res.body.error_description).to.equal('path must not contain control characters');
    });

    it('refuses a null byte in a JSON field, naming it, and creates nothing', async () => {
      const res = await call(server, `/apis/v2/groups/${group.id}/oauth-apps`, {
        token,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'Evil\u0000App', homepageURL: 'https://a.example', callbackURL: 'https://a.example/cb' }),
      });
      expectApiError(res, 400, 'invalid_request');
      expect(res.body.error_description).to.equal('name must not contain control characters');
      expect(await server.db('oauth_apps').where('name', 'like', 'Evil%')).to.have.length(0);
    });

    it('refuses a line break in a one-line JSON field', async () => {
      const res = await call(server, `/apis/v2/oauth-apps/${app.clientId}`, {
        token,
        method: 'PATCH',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'Two\nlines' }),
      });
      expectApiError(res, 400, 'invalid_request');
      expect(res.body.error_description).to.equal('name must not contain control characters');
    });

    it('accepts tab, CR and LF in a description', async () => {
      const res = await call(server, `/apis/v2/oauth-apps/${app.clientId}`, {
        token,
        method: 'PATCH',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ description: 'First line\r\nsecond\tline' }),
      });
      expect(res.status, res.text).to.equal(200);
    });

    it('refuses a control character other than tab, CR and LF in a description', async () => {
      const res = await call(server, `/apis/v2/oauth-apps/${app.clientId}`, {
        token,
        method: 'PATCH',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ description: 'bell\u0007' }),
      });
      expectApiError(res, 400, 'invalid_request');
      expect(res.body.error_description).to.equal('description must not contain control characters');
    });

    it('answers a JSON body nested thousands of levels deep with a 400, not a 500', async () => {
      const res = await call(server, `/apis/v2/oauth-apps/${app.clientId}`, {
        token,
        method: 'PATCH',
        headers: { 'content-type': 'application/json' },
        body: `{"name":${'['.repeat(30_000)}"\u0007"${']'.repeat(30_000)}}`,
      });
      expectApiError(res, 400, 'invalid_request');
    });

    it('refuses a control character in a JSON field name, naming it escaped', async () => {
      const res = await call(server, `/apis/v2/oauth-apps/${app.clientId}`, {
        token,
        method: 'PATCH',
        headers: { 'content-type': 'application/json' },
        body: '{"na\\u0000me":"x"}',
      });
      expectApiError(res, 400, 'invalid_request');
      expect(res.body.error_description).to.equal('"na\\u0000me" must not contain control characters');
    });
  });

  describe('pages', () => {
    it('refuses a null byte in a sign-in field with the error page naming it', async () => {
      const browser = await visit(server.url, '/login');
      const res = await browser.submit('/login', { login: `${owner.username}\u0000`, password: 'x' });
      expect(res.status).to.equal(400);
      expect(errorMessage(res.text)).to.equal('Login must not contain control characters');
    });

    it('refuses a control character in a sign-up field and creates no account', async () => {
      const browser = await visit(server.url, '/signup');
      const res = await browser.submit('/signup', { username: 'ctrl-user', email: 'ctrl@example.test', name: 'Ctrl\u001b[31m', password: 'a long password 1' });
      expect(res.status).to.equal(400);
      expect(errorMessage(res.text)).to.equal('Name must not contain control characters');
      expect(await server.db('users').where({ username_key: 'ctrl-user' })).to.have.length(0);
    });

    it('accepts line breaks in a group description', async () => {
      const browser = await signIn(server.url, owner);
      await browser.get('/groups/new').expect(200);
      const res = await browser.submit('/groups/new', { name: 'Lines', path: `lines-${Date.now()}`, description: 'one\r\ntwo' });
      expect(res.status).to.equal(302);
    });

    it('refuses a control character in a path segment with the error page', async () => {
      const res = await fetch(`${server.url}/groups/a%00b`);
      expect(res.status).to.equal(400);
      expect(errorMessage(await res.text())).to.equal('Path must not contain control characters');
    });

    it('refuses a control character in a query parameter with the error page naming it', async () => {
      const res = await fetch(`${server.url}/login?return_to=%2Fgroups%0D%0ASet-Cookie:x`);
      expect(res.status).to.equal(400);
      expect(errorMessage(await res.text())).to.equal('return_to must not contain control characters');
    });

    it('refuses a control character in a cookie, naming the cookie', async () => {
      const res = await fetch(`${server.url}/login`, { headers: { cookie: 'idp_session=abc\tdef' } });
      expect(res.status).to.equal(400);
      expect(errorMessage(await res.text())).to.equal('Cookie idp_session must not contain control characters');
    });
  });
});

describe('control characters in deeply nested JSON', () => {
  it('finds a control character thousands of levels deep without running out of stack', async () => {
    const { fieldWithControlCharacter } = await import('../../src/control-characters.js');
    let value: unknown = 'bell\u0007';
    for (let i = 0; i < 50_000; i += 1) value = [value];
    expect(fieldWithControlCharacter({ deep: value })).to.match(/^deep(\.0)+$/);
  });
});
