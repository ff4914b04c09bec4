import { expect } from 'chai';
import { Browser } from '../helpers/browser.js';
import { call, escapeRegExp, expectApiError, type ApiResponse } from '../helpers/api.js';
import { describeEachProfile, useIdp, type RunningIdp } from '../helpers/app.js';
import { CALLBACK, joinGroup, makeApp, makeClient, makeGroup, makeUser, ownerWithToken, personalToken, type TestUser } from '../helpers/factories.js';
import { authorize, basicAuth, oauthTokens, tokenRequest } from '../helpers/oauth.js';

const SECRET_SHAPE = /^hs_[0-9A-Za-z]{36}$/;

/** The API as a script calls it: JSON in, JSON out, with a token. */
function apiOf(idp: RunningIdp) {
  return (token: string, method: string, path: string, body?: unknown): Promise<ApiResponse> =>
    call(idp, `/apis/v2${path}`, {
      token,
      method,
      ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
    });
}

interface ResourceData {
  id: number;
  identifier: string;
  name: string;
  scopes: Array<{ name: string; description: string }>;
  tokenFormat: 'opaque' | 'jwt';
  clientId: string;
  secretLastFour: string;
  metadataUrl: string;
  introspectionEndpoint: string;
  createdAt: string;
  updatedAt: string;
  clientSecret?: string;
}

const FIELDS = ['clientId', 'createdAt', 'id', 'identifier', 'introspectionEndpoint', 'metadataUrl', 'name', 'scopes', 'secretLastFour', 'tokenFormat', 'updatedAt'];

let serial = 0;
/** An identifier of its own for each resource: identifiers are unique on the site. */
const identifierFor = () => `https://tools-${process.pid}-${(serial += 1)}.example.test/mcp`;

describeEachProfile('API: resources', (profile) => {
  const idp = useIdp(profile);
  const api = apiOf(idp);
  const count = async (table: string, where: Record<string, unknown>) =>
    Number(((await idp.db(table).where(where).count({ n: '*' }).first()) as { n: number | string }).n);
  const resourceRow = (id: number) => idp.db('resources').where({ id }).first();

  /** A valid new resource, with an identifier of its own. */
  const valid = (fields: Record<string, unknown> = {}) => ({
    identifier: identifierFor(),
    name: 'Tools',
    scopes: [
      { name: 'tools:read', description: 'Read your tools' },
      { name: 'tools:write', description: 'Change your tools' },
    ],
    ...fields,
  });

  const owned = () => ownerWithToken(idp.db);

  async function created(token: string, groupId: number, fields: Record<string, unknown> = valid()): Promise<ResourceData> {
    const res = await api(token, 'POST', `/groups/${groupId}/resources`, fields);
    expect(res.status, res.text).to.equal(201);
    return res.body.data as ResourceData;
  }

  /** Introspects `token` as a resource's server does: HTTP Basic with its client id and secret. */
  const introspect = (clientId: string, secret: string, token = 'ho_not-a-token') =>
    call(idp, '/login/oauth/introspect', { method: 'POST', authorization: basicAuth(clientId, secret), form: { token } });

  /** An access token bound to the resource: authorize and exchange with `resource=`, as a client of another group does. */
  async function tokenFor(resource: ResourceData, person: TestUser): Promise<string> {
    const client = await makeClient(idp.db);
    const browser = new Browser(idp.url);
    const callback = await authorize(browser, { ...client, scope: 'tools:read', extra: { resource: resource.identifier } }, person);
    const code = callback.searchParams.get('code');
    expect(code, callback.toString()).to.be.a('string');
    const res = await tokenRequest(idp.url, {
      form: { grant_type: 'authorization_code', client_id: client.clientId, client_secret: client.clientSecret, code: code!, redirect_uri: client.redirectUri, resource: resource.identifier },
    });
    expect(res.status, res.text).to.equal(200);
    return String(res.body.access_token);
  }

  describe('an owner', () => {
    it('registers a resource: 201, a Location, the credentials its server uses, the secret once', async () => {
      const { group, token } = await owned();
      const fields = valid({ tokenFormat: 'jwt' });
      const res = await api(token, 'POST', `/groups/${group.id}/resources`, fields);
      expect(res.status, res.text).to.equal(201);
      const data = res.body.data as ResourceData;
      expect(Object.keys(data).sort()).to.deep.equal([...FIELDS, 'clientSecret'].sort());
      expect(data).to.deep.include({ identifier: fields.identifier, name: 'Tools', scopes: fields.scopes, tokenFormat: 'jwt' });
      expect(data.clientId).to.match(/^rs_[0-9a-f]{20}$/);
      expect(data.clientSecret).to.match(SECRET_SHAPE);
      expect(data.secretLastFour).to.equal(data.clientSecret!.slice(-4));
      expect(data.introspectionEndpoint).to.equal(`${idp.url}/login/oauth/introspect`);
      expect(data.metadataUrl).to.equal(`${idp.url}/login/oauth/resource-metadata?${new URLSearchParams({ resource: fields.identifier })}`);
      expect(res.headers.get('location')).to.equal(`${idp.url}/apis/v2/groups/${group.id}/resources/${data.id}`);
      const row = await resourceRow(data.id);
      expect(row).to.include({ group_id: group.id, identifier: fields.identifier, client_id: data.clientId });
      expect(JSON.stringify(row)).not.to.include(data.clientSecret);
    });

    it('stores the identifier in its normal form, and opaque tokens when no format is given', async () => {
      const { group, token } = await owned();
      const bare = `https://bare-${process.pid}-${(serial += 1)}.example.test`;
      const resource = await created(token, group.id, valid({ identifier: bare }));
      expect(resource).to.include({ identifier: `${bare}/`, tokenFormat: 'opaque' });
    });

    it('reads a resource by its Location, without the secret', async () => {
      const { group, token } = await owned();
      const res = await api(token, 'POST', `/groups/${group.id}/resources`, valid());
      const read = await call(idp, new URL(res.headers.get('location')!).pathname, { token });
      expect(read.status, read.text).to.equal(200);
      const { clientSecret, ...rest } = res.body.data as ResourceData;
      expect(read.body.data).to.deep.equal(rest);
      expect(read.text).not.to.include(clientSecret);
    });

    it('lists the group’s own resources in ascending order, paginated with a Link header, never a secret', async () => {
      const { owner, group, token } = await owned();
      const made = [];
      for (let i = 0; i < 3; i += 1) made.push(await created(token, group.id));
      await created(token, (await makeGroup(idp.db, owner.id)).id);
      const first = await api(token, 'GET', `/groups/${group.id}/resources?pageSize=2`);
      expect(first.status, first.text).to.equal(200);
      expect(first.body.data.total).to.equal(3);
      expect(first.body.data.items.map((r: ResourceData) => r.id)).to.deep.equal(made.slice(0, 2).map((r) => r.id));
      expect(first.headers.get('link')).to.include(`<${idp.url}/apis/v2/groups/${group.id}/resources?pageNumber=2&pageSize=2>; rel="next"`);
      const second = await api(token, 'GET', `/groups/${group.id}/resources?pageSize=2&pageNumber=2`);
      expect(second.body.data.items.map((r: ResourceData) => r.id)).to.deep.equal([made[2]!.id]);
      for (const res of [first, second]) {
        for (const r of made) expect(res.text).not.to.include(r.clientSecret);
        for (const item of res.body.data.items) expect(Object.keys(item).sort()).to.deep.equal(FIELDS);
      }
    });

    it('edits each field, keeping the ones left out and the credentials', async () => {
      const { group, token } = await owned();
      const resource = await created(token, group.id);
      const changes = { identifier: identifierFor(), name: 'Renamed', scopes: [{ name: 'files.read', description: 'Read your files' }], tokenFormat: 'jwt' };
      let expected: Record<string, unknown> = { identifier: resource.identifier, name: resource.name, scopes: resource.scopes, tokenFormat: resource.tokenFormat };
      for (const [field, value] of Object.entries(changes)) {
        const res = await api(token, 'PATCH', `/groups/${group.id}/resources/${resource.id}`, { [field]: value });
        expect(res.status, res.text).to.equal(200);
        expected = { ...expected, [field]: value };
        expect(res.body.data).to.deep.include({ ...expected, clientId: resource.clientId, secretLastFour: resource.secretLastFour });
        expect(res.body.data).not.to.have.property('clientSecret');
        expect((await api(token, 'GET', `/groups/${group.id}/resources/${resource.id}`)).body.data).to.deep.equal(res.body.data);
      }
      const moved = (await api(token, 'GET', `/groups/${group.id}/resources/${resource.id}`)).body.data as ResourceData;
      expect(moved.metadataUrl).to.include(encodeURIComponent(changes.identifier));
    });

    it('leaves updatedAt and the audit log alone on an edit that changes nothing', async () => {
      const { group, token } = await owned();
      const { clientSecret: _, ...resource } = await created(token, group.id);
      const audit = await count('audit_events', { group_id: group.id });
      for (const body of [{}, { name: resource.name, scopes: resource.scopes }]) {
        const res = await api(token, 'PATCH', `/groups/${group.id}/resources/${resource.id}`, body);
        expect(res.status, res.text).to.equal(200);
        expect(res.body.data).to.deep.equal(resource);
      }
      expect(await count('audit_events', { group_id: group.id })).to.equal(audit);
    });

    it('deletes a resource: 204, then 404; clients can no longer ask for it', async () => {
      const { group, token } = await owned();
      const resource = await created(token, group.id);
      const res = await api(token, 'DELETE', `/groups/${group.id}/resources/${resource.id}`);
      expect(res.status, res.text).to.equal(204);
      expect(res.text).to.equal('');
      expectApiError(await api(token, 'GET', `/groups/${group.id}/resources/${resource.id}`), 404, 'not_found');
      expectApiError(await api(token, 'DELETE', `/groups/${group.id}/resources/${resource.id}`), 404, 'not_found');
      expect(await resourceRow(resource.id)).to.equal(undefined);
      expect((await call(idp, new URL(resource.metadataUrl).pathname + new URL(resource.metadataUrl).search)).status).to.equal(404);
      expect((await introspect(resource.clientId, resource.clientSecret!)).status).to.equal(401);
    });

    it('gives a metadataUrl that answers the resource’s RFC 9728 document', async () => {
      const { group, token } = await owned();
      const resource = await created(token, group.id);
      const url = new URL(resource.metadataUrl);
      const res = await call(idp, `${url.pathname}${url.search}`);
      expect(res.status, res.text).to.equal(200);
      expect(res.body).to.deep.equal({
        resource: resource.identifier,
        authorization_servers: [idp.url],
        scopes_supported: ['tools:read', 'tools:write'],
        bearer_methods_supported: ['header'],
        resource_name: 'Tools',
      });
    });

    it('replaces the secret: 201 with the new one once; the old one no longer introspects, the new one does', async () => {
      const { owner, group, token } = await owned();
      const resource = await created(token, group.id);
      const accessToken = await tokenFor(resource, owner);
      const before = await introspect(resource.clientId, resource.clientSecret!, accessToken);
      expect(before.status, before.text).to.equal(200);
      expect(before.body).to.include({ active: true, aud: resource.identifier, scope: 'tools:read' });

      const res = await api(token, 'POST', `/groups/${group.id}/resources/${resource.id}/secret`);
      expect(res.status, res.text).to.equal(201);
      const renewed = res.body.data as ResourceData;
      expect(renewed.clientSecret).to.match(SECRET_SHAPE).and.not.equal(resource.clientSecret);
      expect(renewed).to.include({ id: resource.id, clientId: resource.clientId, secretLastFour: renewed.clientSecret!.slice(-4) });

      const old = await introspect(resource.clientId, resource.clientSecret!, accessToken);
      expect(old.status, old.text).to.equal(401);
      expect(old.body.error).to.equal('invalid_client');
      const now = await introspect(resource.clientId, renewed.clientSecret!, accessToken);
      expect(now.status, now.text).to.equal(200);
      expect(now.body).to.include({ active: true, aud: resource.identifier });

      const read = await api(token, 'GET', `/groups/${group.id}/resources/${resource.id}`);
      expect(read.body.data.secretLastFour).to.equal(renewed.secretLastFour);
      expect(read.text).not.to.include(renewed.clientSecret);
    });

    it('replaces the secret with an empty object as the body, and refuses a field', async () => {
      const { group, token } = await owned();
      const resource = await created(token, group.id);
      const path = `/groups/${group.id}/resources/${resource.id}/secret`;
      expect((await api(token, 'POST', path, {})).status).to.equal(201);
      const res = await api(token, 'POST', path, { secret: 'hs_mine' });
      expectApiError(res, 400, 'invalid_request');
      expect(res.body.error_description).to.include('secret');
    });

    it('records the creation, each edit, the new secret and the deletion in the group’s audit log, never a secret', async () => {
      const { owner, group, token } = await owned();
      const resource = await created(token, group.id);
      await api(token, 'PATCH', `/groups/${group.id}/resources/${resource.id}`, { name: 'Renamed' });
      const renewed = (await api(token, 'POST', `/groups/${group.id}/resources/${resource.id}/secret`)).body.data as ResourceData;
      await api(token, 'DELETE', `/groups/${group.id}/resources/${resource.id}`);
      const events = (await idp.db('audit_events').where({ group_id: group.id }).whereLike('action', 'resource.%').orderBy('id')) as Array<{ action: string; actor_id: number; target: string; details: string }>;
      expect(events.map((e) => e.action)).to.deep.equal(['resource.create', 'resource.update', 'resource.secret.regenerate', 'resource.delete']);
      for (const e of events) expect(e).to.include({ actor_id: owner.id, target: resource.identifier });
      const details = events.map((e) => e.details).join();
      expect(details).not.to.include(resource.clientSecret);
      expect(details).not.to.include(renewed.clientSecret);
      const audit = await api(token, 'GET', `/groups/${group.id}/audit-events?action=resource.create`);
      expect(audit.status, audit.text).to.equal(200);
      expect(audit.body.data.total).to.equal(1);
    });

    it('refuses a resource past the group’s twentieth with 409', async () => {
      const { group, token } = await owned();
      for (let i = 0; i < 20; i += 1) await created(token, group.id);
      const res = await api(token, 'POST', `/groups/${group.id}/resources`, valid());
      expectApiError(res, 409, 'conflict');
      expect(res.body.error_description).to.include('20');
      expect(await count('resources', { group_id: group.id })).to.equal(20);
    });

    it('refuses an identifier registered by another group with 409, on a create and on an edit', async () => {
      const { group, token } = await owned();
      const theirs = await ownerWithToken(idp.db);
      const taken = await created(theirs.token, theirs.group.id);
      // The same identifier as written by hand: the scheme and the host in capitals name it too.
      for (const identifier of [taken.identifier, taken.identifier.replace('https://', 'HTTPS://').replace('.example.test', '.EXAMPLE.TEST')]) {
        const res = await api(token, 'POST', `/groups/${group.id}/resources`, valid({ identifier }));
        expectApiError(res, 409, 'conflict');
        expect(res.body.error_description).to.include('identifier');
      }
      const mine = await created(token, group.id);
      const edit = await api(token, 'PATCH', `/groups/${group.id}/resources/${mine.id}`, { identifier: taken.identifier });
      expectApiError(edit, 409, 'conflict');
      expect(edit.body.error_description).to.include('identifier');
      expect(await count('resources', { group_id: group.id })).to.equal(1);
      expect((await resourceRow(mine.id)).identifier).to.equal(mine.identifier);
    });
  });

  describe('bad fields', () => {
    const cases: Array<{ name: string; body: (base: Record<string, unknown>) => unknown; field: string; said?: RegExp }> = [
      { name: 'no identifier', body: ({ identifier: _, ...rest }) => rest, field: 'identifier' },
      { name: 'an ftp:// identifier', body: (b) => ({ ...b, identifier: 'ftp://tools.example.test/' }), field: 'identifier', said: /https:\/\// },
      { name: 'an http:// identifier off loopback', body: (b) => ({ ...b, identifier: 'http://tools.example.test/mcp' }), field: 'identifier' },
      { name: 'an identifier with a query', body: (b) => ({ ...b, identifier: 'https://tools.example.test/mcp?x=1' }), field: 'identifier', said: /query/ },
      { name: 'an identifier with a fragment', body: (b) => ({ ...b, identifier: 'https://tools.example.test/mcp#top' }), field: 'identifier', said: /fragment/ },
      { name: 'a relative identifier', body: (b) => ({ ...b, identifier: '/mcp' }), field: 'identifier' },
      { name: 'an identifier of 501 characters', body: (b) => ({ ...b, identifier: `https://tools.example.test/${'a'.repeat(475)}` }), field: 'identifier' },
      { name: 'a number as identifier', body: (b) => ({ ...b, identifier: 5 }), field: 'identifier' },
      { name: 'no name', body: ({ name: _, ...rest }) => rest, field: 'name' },
      { name: 'a name of 101 characters', body: (b) => ({ ...b, name: 'n'.repeat(101) }), field: 'name' },
      { name: 'no scopes', body: ({ scopes: _, ...rest }) => rest, field: 'scopes' },
      { name: 'an empty list of scopes', body: (b) => ({ ...b, scopes: [] }), field: 'scopes', said: /at least one/ },
      { name: 'the reserved scope openid', body: (b) => ({ ...b, scopes: [{ name: 'openid', description: 'Sign in' }] }), field: 'scopes', said: /service's own/ },
      { name: 'the reserved scope groups:read-write', body: (b) => ({ ...b, scopes: [{ name: 'groups:read-write', description: 'Groups' }] }), field: 'scopes' },
      { name: 'a scope named twice', body: (b) => ({ ...b, scopes: [{ name: 'a', description: 'A' }, { name: 'a', description: 'Again' }] }), field: 'scopes', said: /twice/ },
      { name: 'a scope with a space in its name', body: (b) => ({ ...b, scopes: [{ name: 'a b', description: 'A' }] }), field: 'scopes' },
      { name: 'a scope without a description', body: (b) => ({ ...b, scopes: [{ name: 'a' }] }), field: 'scopes' },
      { name: 'a scope with an unknown field', body: (b) => ({ ...b, scopes: [{ name: 'a', description: 'A', admin: true }] }), field: 'scopes' },
      { name: 'scopes that are not a list', body: (b) => ({ ...b, scopes: 'tools:read' }), field: 'scopes' },
      { name: 'an unknown tokenFormat', body: (b) => ({ ...b, tokenFormat: 'paseto' }), field: 'tokenFormat', said: /opaque or jwt/ },
      { name: 'an unknown field', body: (b) => ({ ...b, audience: 'x' }), field: 'audience' },
      { name: 'a JSON array', body: (b) => [b], field: 'body' },
    ];

    for (const c of cases) {
      it(`answers a create with ${c.name} with 400 naming ${c.field}, creating nothing`, async () => {
        const { group, token } = await owned();
        const res = await api(token, 'POST', `/groups/${group.id}/resources`, c.body(valid()));
        expectApiError(res, 400, 'invalid_request');
        expect(res.body.error_description).to.match(new RegExp(escapeRegExp(c.field)));
        if (c.said) expect(res.body.error_description).to.match(c.said);
        expect(await count('resources', { group_id: group.id })).to.equal(0);
      });
    }

    for (const c of cases.filter((x) => !x.name.startsWith('no '))) {
      it(`answers an edit with ${c.name} with 400 naming ${c.field}, changing nothing`, async () => {
        const { group, token } = await owned();
        const resource = await created(token, group.id);
        const before = await resourceRow(resource.id);
        const whole = c.body(valid()) as Record<string, unknown>;
        const body = Array.isArray(whole) ? whole : { [c.field]: whole[c.field] };
        const res = await api(token, 'PATCH', `/groups/${group.id}/resources/${resource.id}`, body);
        expectApiError(res, 400, 'invalid_request');
        expect(res.body.error_description).to.match(new RegExp(escapeRegExp(c.field)));
        expect(await resourceRow(resource.id)).to.deep.equal(before);
      });
    }

    it('refuses an identifier at this service’s own origin, naming identifier', async () => {
      const { group, token } = await owned();
      for (const identifier of [`${idp.url}/apis/v2`, `${idp.url}/`]) {
        const res = await api(token, 'POST', `/groups/${group.id}/resources`, valid({ identifier }));
        expectApiError(res, 400, 'invalid_request');
        expect(res.body.error_description).to.match(/^identifier must not be an address of this service/);
      }
      const resource = await created(token, group.id);
      const edit = await api(token, 'PATCH', `/groups/${group.id}/resources/${resource.id}`, { identifier: `${idp.url}/mcp` });
      expectApiError(edit, 400, 'invalid_request');
      expect(edit.body.error_description).to.include('identifier');
      expect(await count('resources', { group_id: group.id })).to.equal(1);
    });

    it('names every bad field at once', async () => {
      const { group, token } = await owned();
      const res = await api(token, 'POST', `/groups/${group.id}/resources`, { identifier: 'ftp://x.example.test/', name: '', scopes: [], tokenFormat: 'x' });
      expectApiError(res, 400, 'invalid_request');
      for (const field of ['identifier', 'name', 'scopes', 'tokenFormat']) expect(res.body.error_description).to.include(field);
    });

    for (const id of ['0', 'x', '2147483648']) {
      it(`answers the resource id ${id} with 400 naming resourceId`, async () => {
        const { group, token } = await owned();
        const res = await api(token, 'GET', `/groups/${group.id}/resources/${id}`);
        expectApiError(res, 400, 'invalid_request');
        expect(res.body.error_description).to.include('resourceId');
      });
    }
  });

  describe('who may', () => {
    /** Every operation on a group's resources. */
    function everyOperation(groupId: number, resourceId: number): Array<[string, string, unknown?]> {
      const one = `/groups/${groupId}/resources/${resourceId}`;
      return [
        ['GET', `/groups/${groupId}/resources`],
        ['POST', `/groups/${groupId}/resources`, valid()],
        ['GET', one],
        ['PATCH', one, { identifier: 'https://attacker.example.test/mcp' }],
        ['POST', `${one}/secret`],
        ['DELETE', one],
      ];
    }

    async function withResource() {
      const { owner, group, token } = await owned();
      const resource = await created(token, group.id);
      return { owner, group, token, resource };
    }

    it('answers no token with 401 and a token without groups:read-write with 403 insufficient_scope', async () => {
      const { owner, group, resource } = await withResource();
      const readOnly = await personalToken(idp.db, owner.id, { scopes: ['groups:read-only'] });
      for (const [method, path, body] of everyOperation(group.id, resource.id)) {
        expectApiError(await call(idp, `/apis/v2${path}`, { method }), 401, 'unauthorized');
        expectApiError(await api(readOnly, method, path, body), 403, 'insufficient_scope');
      }
      expect(await resourceRow(resource.id)).to.include({ identifier: resource.identifier });
    });

    for (const role of ['maintainer', 'member'] as const) {
      it(`answers a ${role} with 403 forbidden on every operation and changes nothing`, async () => {
        const { owner, group, resource } = await withResource();
        const user = await joinGroup(idp.db, group, owner, role);
        const theirs = await personalToken(idp.db, user.id, { scopes: ['groups:read-write'] });
        const audit = await count('audit_events', { group_id: group.id });
        const before = await resourceRow(resource.id);
        for (const [method, path, body] of everyOperation(group.id, resource.id)) {
          const res = await api(theirs, method, path, body);
          expectApiError(res, 403, 'forbidden');
          expect(res.text).not.to.include(resource.clientId);
        }
        expect(await resourceRow(resource.id)).to.deep.equal(before);
        expect(await count('resources', { group_id: group.id })).to.equal(1);
        expect(await count('audit_events', { group_id: group.id })).to.equal(audit);
      });
    }

    it('answers an outsider with 404 for the group, as for one that does not exist', async () => {
      const { group, resource } = await withResource();
      const outsider = await makeUser(idp.db);
      const theirs = await personalToken(idp.db, outsider.id, { scopes: ['groups:read-write'] });
      for (const [method, path, body] of everyOperation(group.id, resource.id)) {
        const res = await api(theirs, method, path, body);
        expectApiError(res, 404, 'not_found');
        const missing = await api(theirs, method, path.replace(`/groups/${group.id}/`, '/groups/2147483647/'), body);
        expect(res.body.error_description, `${method} ${path}`).to.equal(missing.body.error_description);
      }
    });

    it('answers a resource of another group, even one the caller owns, with 404 through this group’s path', async () => {
      const { owner, group, token } = await owned();
      const theirs = await makeGroup(idp.db, owner.id);
      const resource = await created(token, theirs.id);
      const before = await resourceRow(resource.id);
      const audit = await count('audit_events', { group_id: theirs.id });
      for (const [method, path, body] of everyOperation(group.id, resource.id).slice(2)) {
        expectApiError(await api(token, method, path, body), 404, 'not_found');
      }
      expect(await resourceRow(resource.id)).to.deep.equal(before);
      expect(await count('audit_events', { group_id: theirs.id })).to.equal(audit);
    });

    it('lets another owner of the group manage the resource', async () => {
      const { owner, group, resource } = await withResource();
      const coOwner = await joinGroup(idp.db, group, owner, 'owner');
      const theirs = await personalToken(idp.db, coOwner.id, { scopes: ['groups:read-write'] });
      expect((await api(theirs, 'PATCH', `/groups/${group.id}/resources/${resource.id}`, { name: 'Theirs' })).status).to.equal(200);
      expect((await api(theirs, 'DELETE', `/groups/${group.id}/resources/${resource.id}`)).status).to.equal(204);
    });

    describe('an application’s OAuth token (ho_) with groups:read-write', () => {
      async function ownerAndThirdParty() {
        const context = await withResource();
        const otherOwner = await makeUser(idp.db);
        const third = await makeApp(idp.db, otherOwner.id, (await makeGroup(idp.db, otherOwner.id)).id);
        const { accessToken } = await oauthTokens(idp.url, { clientId: third.clientId, clientSecret: third.clientSecret, redirectUri: CALLBACK }, context.owner, 'groups:read-write');
        return { ...context, ho: accessToken };
      }

      it('cannot create, change, delete or replace the secret: 403 personal_token_required', async () => {
        const { group, resource, ho } = await ownerAndThirdParty();
        const before = await resourceRow(resource.id);
        for (const [method, path, body] of everyOperation(group.id, resource.id).filter(([method]) => method !== 'GET')) {
          const res = await api(ho, method, path, body);
          expectApiError(res, 403, 'personal_token_required');
          expect(res.body.error_description, `${method} ${path}`).to.match(/resources/).and.match(/personal access token \(ha_\)/);
          expect(res.text).not.to.match(/hs_/);
        }
        expect(await resourceRow(resource.id)).to.deep.equal(before);
        expect(await count('resources', { group_id: group.id })).to.equal(1);
      });

      it('still reads the resources, never a secret', async () => {
        const { group, resource, ho } = await ownerAndThirdParty();
        for (const [method, path] of everyOperation(group.id, resource.id).filter(([method]) => method === 'GET')) {
          const res = await api(ho, method, path);
          expect(res.status, `${method} ${path} ${res.text}`).to.equal(200);
          expect(res.text).not.to.include(resource.clientSecret);
        }
      });
    });
  });
});
