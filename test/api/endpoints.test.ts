import { expect } from 'chai';
import { request } from 'node:http';
import { addMember } from '../../src/services/groups.js';
import { call, expectApiError, type ApiResponse } from '../helpers/api.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { type Client, groupAccess, makeClient, makeGroup, makeUser, personalToken, type TestUser } from '../helpers/factories.js';
import { oauthTokens } from '../helpers/oauth.js';
import { setEmailVerified } from '../helpers/email-verification.js';

describeEachProfile('API endpoints', (profile) => {
  const idp = useIdp(profile);
  let client: Client;
  let user: TestUser;
  let pat: string;

  before(async () => {
    client = await makeClient(idp.db);
    user = await makeUser(idp.db, { name: 'Ada <Lovelace>' });
    pat = await personalToken(idp.db, user.id);
  });

  describe('GET /apis/v2/user', () => {
    /** A new user whose address is verified or not, as the test needs. */
    async function person(verified: boolean): Promise<TestUser> {
      const made = await makeUser(idp.db, { name: 'Ada <Lovelace>' });
      await setEmailVerified(idp.db, made, verified);
      return made;
    }
    const userOf = async (token: string) => {
      const res = await call(idp, '/apis/v2/user', { token });
      expect(res.status, res.text).to.equal(200);
      return res.body;
    };

    it('gives an ho_ token with groups:read-only the id, username and name (its consent page names them), and no address', async () => {
      const ada = await person(true);
      const { accessToken } = await oauthTokens(idp.url, client, ada, 'groups:read-only');
      expect(await userOf(accessToken)).to.deep.equal({ data: { id: ada.id, username: ada.username, name: 'Ada <Lovelace>' } });
    });

    it('gives an openid-only ho_ token the id alone, as its consent page says ("your user id")', async () => {
      const ada = await person(true);
      const { accessToken, scope } = await oauthTokens(idp.url, client, ada, 'openid');
      expect(scope).to.equal('openid');
      expect(await userOf(accessToken)).to.deep.equal({ data: { id: ada.id } });
    });

    it('gives an ho_ token with profile the username and name, and with email a verified address and emailVerified', async () => {
      const ada = await person(true);
      const profile = await oauthTokens(idp.url, client, ada, 'openid profile');
      expect(await userOf(profile.accessToken)).to.deep.equal({ data: { id: ada.id, username: ada.username, name: 'Ada <Lovelace>' } });
      const email = await oauthTokens(idp.url, client, ada, 'openid email');
      expect(await userOf(email.accessToken)).to.deep.equal({ data: { id: ada.id, email: ada.email, emailVerified: true } });
    });

    it('never gives an address that is not verified, to an ho_ token with the email scope or to the user’s own ha_ token: emailVerified says false', async () => {
      // Tokens made while the address was verified; then it changes (as a new address does), unverified.
      const ada = await person(true);
      const { accessToken, scope } = await oauthTokens(idp.url, client, ada, 'openid email groups:read-only');
      expect(scope.split(' ')).to.include('email');
      const own = await personalToken(idp.db, ada.id);
      await setEmailVerified(idp.db, ada, false);
      expect(await userOf(accessToken)).to.deep.equal({ data: { id: ada.id, username: ada.username, name: 'Ada <Lovelace>', emailVerified: false } });
      expect(await userOf(own)).to.deep.equal({ data: { id: ada.id, username: ada.username, name: 'Ada <Lovelace>', emailVerified: false } });
    });

    it('gives an ha_ token (the user’s own) every field, whatever its scope', async () => {
      const ada = await person(true);
      const own = await personalToken(idp.db, ada.id, { scopes: ['groups:read-only'] });
      expect(await userOf(own)).to.deep.equal({ data: { id: ada.id, username: ada.username, name: 'Ada <Lovelace>', email: ada.email, emailVerified: true } });
    });

    it('answers 401 invalid_token when the token’s user no longer exists', async () => {
      const gone = await makeUser(idp.db);
      const token = await personalToken(idp.db, gone.id);
      // Deleting the user cascades to their tokens; an OAuth token would outlive it, so check that path by hand.
      const { accessToken } = await oauthTokens(idp.url, client, gone);
      await idp.db('users').where({ id: gone.id }).delete();
      expectApiError(await call(idp, '/apis/v2/user', { token }), 401, 'invalid_token');
      expectApiError(await call(idp, '/apis/v2/user', { token: accessToken }), 401, 'invalid_token');
    });
  });

  describe('GET /apis/v2/groups/{id}', () => {
    it('returns a group of the user with its fields and the user’s role', async () => {
      const owner = await makeUser(idp.db);
      const group = await makeGroup(idp.db, owner.id, { name: 'Research' });
      await addMember(idp.db, await groupAccess(idp.db, owner.id, group.id), { user: user.username, role: 'maintainer' });
      const res = await call(idp, `/apis/v2/groups/${group.id}`, { token: pat });
      expect(res.status, res.text).to.equal(200);
      expect(Object.keys(res.body)).to.deep.equal(['data']);
      expect(res.body.data).to.include({ id: group.id, name: 'Research', path: group.path, description: '', visibilityLevel: 'private', requireTwoFactor: false, role: 'maintainer' });
      expect(Object.keys(res.body.data).sort()).to.deep.equal(['createdAt', 'description', 'id', 'name', 'path', 'personalTokenMaxLifetimeDays', 'requireTwoFactor', 'role', 'updatedAt', 'visibilityLevel']);
      expect(new Date(res.body.data.createdAt).toISOString()).to.equal(res.body.data.createdAt);
      // The list's page query writes its timestamps its own way: the same group reads the same in both.
      const listed = await call(idp, '/apis/v2/groups', { token: pat, query: { pageSize: '50' } });
      const inList = (listed.body.data.items as Array<{ id: number; createdAt: string; updatedAt: string }>).find((g) => g.id === group.id);
      expect(inList).to.include({ createdAt: res.body.data.createdAt, updatedAt: res.body.data.updatedAt });
    });

    it('answers 404 for a group the user is not in, and for no group at all, alike', async () => {
      const other = await makeUser(idp.db);
      const group = await makeGroup(idp.db, other.id);
      const notMine = await call(idp, `/apis/v2/groups/${group.id}`, { token: pat });
      const none = await call(idp, '/apis/v2/groups/2147483647', { token: pat });
      expectApiError(notMine, 404, 'not_found');
      expectApiError(none, 404, 'not_found');
      expect(notMine.body.error_description).to.equal(none.body.error_description);
    });

    for (const id of ['abc', '0', '-1', '1.5', '01', '99999999999']) {
      it(`refuses the id "${id}" with 400 invalid_request naming id`, async () => {
        const res = await call(idp, `/apis/v2/groups/${id}`, { token: pat });
        expectApiError(res, 400, 'invalid_request');
        expect(res.body.error_description).to.include('id');
      });
    }
  });

  describe('PATCH /apis/v2/groups/{id}', () => {
    it('leaves updatedAt and the audit log alone on an edit that changes nothing', async () => {
      const owner = await makeUser(idp.db);
      const group = await makeGroup(idp.db, owner.id);
      const token = await personalToken(idp.db, owner.id, { scopes: ['groups:read-write'] });
      const before = (await call(idp, `/apis/v2/groups/${group.id}`, { token })).body.data;
      const audit = () => idp.db('audit_events').where({ group_id: group.id }).count({ n: '*' }).first().then((r) => Number((r as { n: number | string }).n));
      const entries = await audit();
      await new Promise((resolve) => setTimeout(resolve, 20));
      for (const body of [{}, { name: before.name, description: before.description, visibilityLevel: before.visibilityLevel, requireTwoFactor: false, personalTokenMaxLifetimeDays: null }]) {
        const res = await call(idp, `/apis/v2/groups/${group.id}`, { token, method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
        expect(res.status, res.text).to.equal(200);
        expect(res.body.data).to.deep.equal(before);
      }
      expect(await audit()).to.equal(entries);
    });
  });

  describe('routes and methods', () => {
    it('answers an unknown route under /apis/v2 with a JSON 404, signed in or not', async () => {
      for (const token of [pat, undefined]) {
        const res = await call(idp, '/apis/v2/no-such-thing', { token });
        expectApiError(res, 404, 'not_found');
      }
      expectApiError(await call(idp, '/apis/v2', { token: pat }), 404, 'not_found');
      expectApiError(await call(idp, '/apis/v2/groups/1/nothing', { token: pat }), 404, 'not_found');
    });

    it('answers POST /apis/v2/groups with a JSON 405 and an Allow header', async () => {
      const res = await call(idp, '/apis/v2/groups', {
        token: pat,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"name":"x"}',
      });
      expectApiError(res, 405, 'method_not_allowed');
      expect(res.headers.get('allow')).to.include('GET');
    });

    // fetch() refuses to send TRACE, and Node's HTTP parser answers a method it does not know
    // (FOO) itself; TRACE and PROPFIND reach the server, so they are sent over plain node:http.
    for (const method of ['TRACE', 'PROPFIND']) {
      it(`answers ${method} with a JSON 405 and an Allow header, not a text 501`, async () => {
        const res = await rawRequest(`${idp.url}/apis/v2/groups/1`, method, pat);
        expectApiError(res, 405, 'method_not_allowed');
        expect(res.headers.get('allow')).to.equal('HEAD, GET, PATCH, DELETE');
        expect(res.body.error_description).to.equal(`${method} is not allowed here; allowed: HEAD, GET, PATCH, DELETE`);
        const nowhere = await rawRequest(`${idp.url}/apis/v2/no-such-thing`, method, pat);
        expectApiError(nowhere, 404, 'not_found');
        expect(nowhere.headers.get('allow')).to.equal(null);
      });
    }

    it('refuses a non-JSON body with 415 before looking at the route', async () => {
      const res = await call(idp, '/apis/v2/groups/1/oauth-apps', {
        token: pat,
        method: 'POST',
        headers: { 'content-type': 'text/plain' },
        body: 'name=x',
      });
      expectApiError(res, 415, 'unsupported_media_type');
    });

    it('echoes a sane X-Request-Id and replaces an insane one', async () => {
      const sane = await call(idp, '/apis/v2/user', { token: pat, headers: { 'x-request-id': 'trace-123.abc' } });
      expect(sane.headers.get('x-request-id')).to.equal('trace-123.abc');
      const insane = await call(idp, '/apis/v2/user', { token: pat, headers: { 'x-request-id': 'a b<c>' } });
      expect(insane.headers.get('x-request-id')).to.match(/^[0-9a-f-]{36}$/);
    });

    it('answers odd query strings with a 400, never a 500', async () => {
      for (const query of ['?pageNumber=%ZZ', '?pageSize=%00', '?filter=%E0%A4%A', `?filter=${encodeURIComponent("' or 1=1 --")}`]) {
        const res = await call(idp, `/apis/v2/groups${query}`, { token: pat });
        expect(res.status, `${query}: ${res.text}`).to.be.oneOf([200, 400]);
        expect(res.body).to.be.an('object');
      }
    });
  });
});

/** One request over node:http, which sends any method a token allows (fetch() refuses TRACE). */
function rawRequest(url: string, method: string, token: string): Promise<ApiResponse> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers: { authorization: `Bearer ${token}` } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => {
        const headers = new Headers();
        for (const [name, value] of Object.entries(res.headers)) if (typeof value === 'string') headers.set(name, value);
        resolve({ status: res.statusCode!, headers, text, body: /json/.test(headers.get('content-type') ?? '') && text ? JSON.parse(text) : undefined });
      });
    });
    req.on('error', reject);
    req.end();
  });
}
