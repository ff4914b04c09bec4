import { Validator } from '@seriousme/openapi-schema-validator';
import { expect } from 'chai';
import type { Ajv2020 } from 'ajv/dist/2020.js';
import { setSiteAdmin } from '../../src/services/admin.js';
import { generateClientSecret } from '../../src/services/apps.js';
import { addMember, updateGroupSettings } from '../../src/services/groups.js';
import { createResource } from '../../src/services/resources/manage.js';
import { createWebhook } from '../../src/services/webhooks/manage.js';
import { call } from '../helpers/api.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { appAccess, groupAccess, makeApp, makeClient, makeGroup, makeUser, personalToken } from '../helpers/factories.js';
import { oauthTokens } from '../helpers/oauth.js';
import { documentChecker, inlineRefs, strictAjv, type Json } from '../helpers/openapi.js';

describeEachProfile('API OpenAPI document', (profile) => {
  // Private webhook targets allowed, so that a webhook can be made to a loopback address nothing answers.
  const idp = useIdp(profile, { WEBHOOKS_ALLOW_PRIVATE: 'true' });
  let doc: Json;
  let ajv: Ajv2020;
  /** Checks a live response against the document: a documented status, its JSON schema, its headers. */
  let expectDocumented: ReturnType<typeof documentChecker>;

  before(async () => {
    const res = await call(idp, '/apis/v2/openapi.json');
    expect(res.status).to.equal(200);
    doc = res.body;
    ajv = strictAjv();
    expectDocumented = documentChecker(doc, ajv);
  });

  it('serves a document that a real OpenAPI validator accepts', async () => {
    const validator = new Validator();
    const result = await validator.validate(doc);
    expect(result.errors, JSON.stringify(result.errors, null, 2)).to.equal(undefined);
    expect(result.valid).to.equal(true);
    expect(validator.version).to.equal('3.1');
  });

  it('names this server’s /apis/v2 as its server URL', () => {
    expect(doc.servers).to.deep.equal([{ url: `${idp.url}/apis/v2` }]);
  });

  it('serves the document without a token, as JSON', async () => {
    const res = await call(idp, '/apis/v2/openapi.json');
    expect(res.headers.get('content-type')).to.match(/^application\/json/);
    expect(res.headers.get('www-authenticate')).to.equal(null);
  });

  it('has response schemas that compile under JSON Schema 2020-12 in strict mode', () => {
    for (const [path, operations] of Object.entries(doc.paths as Json)) {
      for (const [method, operation] of Object.entries(operations as Json)) {
        for (const [status, documented] of Object.entries((operation as Json).responses as Json)) {
          const response = inlineRefs(documented, doc) as Json;
          const schema = (response as Json).content?.['application/json']?.schema;
          if (status === '204') {
            expect((response as Json).content, `${method} ${path} 204 has no body`).to.equal(undefined);
            continue;
          }
          expect(schema, `${method} ${path} ${status} has a JSON schema`).to.be.an('object');
          expect(() => ajv.compile(inlineRefs(schema, doc) as Json), `${method} ${path} ${status}`).not.to.throw();
        }
      }
    }
  });

  /** Every operation of the document, with its method and path. */
  const operationsOf = (document: Json) =>
    Object.entries(document.paths as Json).flatMap(([path, operations]) => Object.entries(operations as Json).map(([method, operation]) => ({ path, method, operation: operation as Json })));

  it('documents 400, 415, 429 and 503 on every operation (413 on those that take a body), each once in the components', () => {
    const headersOf = (status: string, operation: Json) => Object.keys((inlineRefs(operation.responses[status], doc) as Json).headers ?? {});
    for (const { path, method, operation } of operationsOf(doc)) {
      const name = `${method.toUpperCase()} ${path}`;
      for (const status of ['400', '415', '429', '503']) expect(operation.responses[status], `${name} documents ${status}`).to.be.an('object');
      if (operation.requestBody) expect(operation.responses['413'], `${name} documents 413`).to.be.an('object');
      expect(operation.responses['503'], name).to.deep.equal({ $ref: '#/components/responses/ServiceUnavailable' });
      expect(headersOf('503', operation), name).to.include('Retry-After');
      expect(headersOf('429', operation), name).to.include('Retry-After');
      if (operation.security?.length === 0) continue;
      expect(operation.responses['429'], name).to.deep.equal({ $ref: '#/components/responses/TooManyRequests' });
      // Every answer to a known token says where it stands; a 401 knows no token.
      for (const [status, response] of Object.entries(operation.responses as Json)) {
        if (status === '401' || response.$ref) continue;
        expect(Object.keys(response.headers ?? {}), `${name} ${status}`).to.include.members(['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Used', 'X-RateLimit-Reset']);
      }
    }
    expect(Object.keys(doc.components.responses.TooManyRequests.headers)).to.include.members(['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Used', 'X-RateLimit-Reset']);
  });

  it('states the rules of URLs, names and text: format uri, the patterns the rules use, control characters refused', () => {
    const { NewOAuthApp, OAuthAppChanges, GroupChanges, User, Group } = doc.components.schemas;
    for (const schema of [NewOAuthApp, OAuthAppChanges]) {
      expect(schema.properties.homepageURL.format).to.equal('uri');
      expect(schema.properties.callbackURL.format).to.equal('uri');
      expect(schema.properties.callbackURL.description).to.include('without a fragment').and.include('https, or http only for localhost');
      expect(schema.properties.signOutRedirectURLs.items.format).to.equal('uri');
      expect(schema.properties.name.description).to.include('Control characters (U+0000–U+001F, U+007F) are refused');
      expect(schema.properties.description.description).to.include('other than tab, line feed and carriage return are refused');
    }
    expect(GroupChanges.properties.name.description).to.include('Control characters');
    const username = new RegExp(User.properties.username.pattern);
    expect(User.properties.username).to.include({ minLength: 2, maxLength: 39 });
    expect(['Ada.L-1_x'].filter((u) => username.test(u))).to.have.length(1);
    expect(['a b', 'ä', 'a/b'].filter((u) => username.test(u))).to.have.length(0);
    const path = new RegExp(Group.properties.path.pattern);
    expect(Group.properties.path).to.include({ minLength: 2, maxLength: 64 });
    expect(path.test('team-1.x_y')).to.equal(true);
    expect(path.test('Team')).to.equal(false);
  });

  it('has schemas strict enough to catch a drifted response', () => {
    const schema = doc.paths['/user'].get.responses['200'].content['application/json'].schema;
    const validate = ajv.compile(inlineRefs(schema, doc) as Json);
    expect(validate({ data: { id: 1, username: 'ada', name: 'n' } })).to.equal(true);
    expect(validate({ data: { id: 1, username: 'ada', name: 'n', createdAt: '2020-01-01T00:00:00.000Z' } }), 'an undocumented field').to.equal(false);
    expect(validate({ data: { id: '1', username: 'ada', name: 'n' } }), 'a string id').to.equal(false);
    const group = ajv.compile(inlineRefs(doc.components.schemas.Group, doc) as Json);
    const valid = { id: 1, name: 'n', path: 'team', description: '', visibilityLevel: 'private', requireTwoFactor: false, personalTokenMaxLifetimeDays: null, createdAt: '2020-01-01T00:00:00.000Z', updatedAt: '2020-01-01T00:00:00.000Z', role: 'owner' };
    expect(group(valid)).to.equal(true);
    expect(group({ ...valid, createdAt: 'yesterday' }), 'a date-time that is not one').to.equal(false);
    expect(group({ ...valid, path: 'Team One' }), 'a path the rules would refuse').to.equal(false);
  });

  describe('a token past its allowance', () => {
    const limited = useIdp(profile, { RATE_LIMIT_API_TOKEN: '1/1h' });

    it('gets the documented 429, with Retry-After and the X-RateLimit-* headers', async () => {
      const user = await makeUser(limited.db);
      const token = await personalToken(limited.db, user.id, { scopes: ['groups:read-only'] });
      expect((await call(limited, '/apis/v2/groups', { token })).status).to.equal(200);
      const refused = await call(limited, '/apis/v2/groups', { token });
      expect(refused.status, refused.text).to.equal(429);
      expectDocumented('get', '/groups', refused);
    });
  });

  if (profile === 'sqlite') {
    describe('storage unreachable', () => {
      // Nothing listens on port 1: every request that counts a token against Redis finds it away.
      const away = useIdp(profile, { REDIS_URL: 'redis://127.0.0.1:1/0' });

      it('answers the documented 503, with Retry-After', async () => {
        const user = await makeUser(away.db);
        const res = await call(away, '/apis/v2/user', { token: await personalToken(away.db, user.id) });
        expect(res.status, res.text).to.equal(503);
        expectDocumented('get', '/user', res);
      });
    });
  }

  describe('live responses match the document', () => {
    let fixture: {
      pat: string;
      patNoEmail: string;
      openidOnly: string;
      oauth: string;
      groupId: number;
      foreignGroupId: number;
      /** A `groups:read-write` token of the owner of `foreignGroupId` and its applications. */
      owner: string;
      app: string;
      fullApp: string;
      doomedApp: string;
      rotatingApp: string;
      rotatingSecret: number;
      /** An application of `groupId`, where the fixture's user is only a member. */
      memberApp: string;
      /** A group of the owner's, for deleting. */
      doomedGroupId: number;
      /** A group of the fixture's user that allows personal access tokens of 7 days at most. */
      cappedGroupId: number;
      /** A group of the owner's where the fixture's user is a member, for leaving. */
      leftGroupId: number;
      userId: number;
      ownerId: number;
      /** A site administrator's token with the `admin` scope. */
      admin: string;
      adminId: number;
      /** A user for the administrator to disable and enable. */
      targetId: number;
      /** A webhook of `foreignGroupId`, with one delivery (`deliveryId`), and one for deleting. */
      hookId: number;
      deliveryId: number;
      doomedHookId: number;
      /** A resource of `foreignGroupId`, and one for deleting. */
      resourceId: number;
      doomedResourceId: number;
    };

    before(async () => {
      const db = idp.db;
      const client = await makeClient(idp.db);
      const user = await makeUser(db);
      const owner = await makeUser(db);
      const group = await makeGroup(db, owner.id, { name: 'Described' });
      await addMember(db, await groupAccess(db, owner.id, group.id), { user: user.username, role: 'member' });
      await makeGroup(db, user.id);
      const foreign = await makeGroup(db, owner.id);
      const full = await makeApp(db, owner.id, foreign.id, { name: 'Two secrets' });
      await generateClientSecret(db, await appAccess(db, owner.id, full.clientId));
      const rotating = await makeApp(db, owner.id, foreign.id, { name: 'Rotating' });
      const left = await makeGroup(db, owner.id);
      await addMember(db, await groupAccess(db, owner.id, left.id), { user: user.username, role: 'member' });
      const siteAdmin = await makeUser(db);
      await setSiteAdmin(db, { userId: 0, ip: null, admin: true }, siteAdmin, true);
      const capped = await makeGroup(db, user.id);
      await updateGroupSettings(db, await groupAccess(db, user.id, capped.id), { name: capped.name, description: '', visibilityLevel: 'private', personalTokenMaxLifetimeDays: 7 });
      const webhooks = { db, cipher: undefined, allowPrivate: true };
      const newHook = { url: 'http://127.0.0.1:9/hook', secret: 'a-secret-of-some-length', events: ['member.added'] };
      const hook = await createWebhook(webhooks, await groupAccess(db, owner.id, foreign.id), newHook);
      const doomedHook = await createWebhook(webhooks, await groupAccess(db, owner.id, foreign.id), { ...newHook, events: ['group.deleted'] });
      await addMember(db, await groupAccess(db, owner.id, foreign.id), { user: (await makeUser(db)).username, role: 'member' });
      const delivery = (await db('webhook_deliveries').where({ webhook_id: hook.id }).first()) as { id: number | string };
      const resources = { db, issuer: idp.url };
      const { resource } = await createResource(resources, await groupAccess(db, owner.id, foreign.id), newResource());
      const { resource: doomedResource } = await createResource(resources, await groupAccess(db, owner.id, foreign.id), newResource());
      fixture = {
        pat: await personalToken(idp.db, user.id),
        patNoEmail: await personalToken(idp.db, user.id, { scopes: ['groups:read-write'], expiresInDays: null }),
        openidOnly: (await oauthTokens(idp.url, client, user, 'openid')).accessToken,
        oauth: (await oauthTokens(idp.url, client, user, 'groups:read-only')).accessToken,
        groupId: group.id,
        foreignGroupId: foreign.id,
        owner: await personalToken(idp.db, owner.id, { scopes: ['groups:read-write'] }),
        app: (await makeApp(db, owner.id, foreign.id, { name: 'Described app' })).clientId,
        fullApp: full.clientId,
        doomedApp: (await makeApp(db, owner.id, foreign.id, { name: 'Doomed' })).clientId,
        rotatingApp: rotating.clientId,
        rotatingSecret: rotating.secretId,
        memberApp: (await makeApp(db, owner.id, group.id, { name: 'Not the member’s' })).clientId,
        doomedGroupId: (await makeGroup(db, owner.id)).id,
        cappedGroupId: capped.id,
        leftGroupId: left.id,
        userId: user.id,
        ownerId: owner.id,
        admin: await personalToken(idp.db, siteAdmin.id, { scopes: ['admin'] }),
        adminId: siteAdmin.id,
        targetId: (await makeUser(db)).id,
        hookId: hook.id,
        deliveryId: Number(delivery.id),
        doomedHookId: doomedHook.id,
        resourceId: resource.id,
        doomedResourceId: doomedResource.id,
      };
    });

    type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';
    const newHook = { url: 'http://127.0.0.1:9/documented', secret: 'a-secret-of-some-length', events: ['member.added', 'group.updated'] };
    let resourceSerial = 0;
    /** A new resource, with an identifier of its own (identifiers are unique on the site). */
    const newResource = (fields: Record<string, unknown> = {}) => ({
      identifier: `https://documented-${process.pid}-${profile.replace(/\W/g, '')}-${(resourceSerial += 1)}.example.test/mcp`,
      name: 'Documented tools',
      scopes: [{ name: 'tools:read', description: 'Read your tools' }],
      ...fields,
    });
    const newApp = { name: 'Documented', homepageURL: 'https://doc.example.test', description: 'd', callbackURL: 'https://doc.example.test/cb' };
    const cases: Array<{ name: string; method: Method; template: string; path: () => string; token?: () => string; body?: unknown; contentType?: string; status: number }> = [
      { name: 'list of groups (ha_)', method: 'get', template: '/groups', path: () => '/groups', token: () => fixture.pat, status: 200 },
      { name: 'list of groups (ho_)', method: 'get', template: '/groups', path: () => '/groups?pageSize=1&pageNumber=2', token: () => fixture.oauth, status: 200 },
      { name: 'empty page of groups', method: 'get', template: '/groups', path: () => '/groups?pageNumber=99', token: () => fixture.pat, status: 200 },
      { name: 'filtered groups', method: 'get', template: '/groups', path: () => '/groups?filter=described', token: () => fixture.pat, status: 200 },
      { name: 'bad pageSize', method: 'get', template: '/groups', path: () => '/groups?pageSize=0', token: () => fixture.pat, status: 400 },
      { name: 'no token', method: 'get', template: '/groups', path: () => '/groups', status: 401 },
      { name: 'a token without the scope', method: 'get', template: '/groups', path: () => '/groups', token: () => fixture.openidOnly, status: 403 },
      { name: 'a group deletion', method: 'delete', template: '/groups/{id}', path: () => `/groups/${fixture.doomedGroupId}`, token: () => fixture.owner, status: 204 },
      { name: 'a deleted group', method: 'delete', template: '/groups/{id}', path: () => `/groups/${fixture.doomedGroupId}`, token: () => fixture.owner, status: 404 },
      { name: 'a member, not an owner', method: 'delete', template: '/groups/{id}', path: () => `/groups/${fixture.groupId}`, token: () => fixture.patNoEmail, status: 403 },
      { name: 'one group', method: 'get', template: '/groups/{id}', path: () => `/groups/${fixture.groupId}`, token: () => fixture.pat, status: 200 },
      { name: 'one group (read-write token)', method: 'get', template: '/groups/{id}', path: () => `/groups/${fixture.groupId}`, token: () => fixture.patNoEmail, status: 200 },
      { name: 'a bad group id', method: 'get', template: '/groups/{id}', path: () => '/groups/abc', token: () => fixture.pat, status: 400 },
      { name: 'an unknown token', method: 'get', template: '/groups/{id}', path: () => `/groups/${fixture.groupId}`, token: () => 'ha_000000000000000000000000000000000000', status: 401 },
      { name: 'a token without the scope', method: 'get', template: '/groups/{id}', path: () => `/groups/${fixture.groupId}`, token: () => fixture.openidOnly, status: 403 },
      { name: 'a group of others', method: 'get', template: '/groups/{id}', path: () => `/groups/${fixture.foreignGroupId}`, token: () => fixture.pat, status: 404 },
      { name: 'a token that lives longer than the group allows', method: 'get', template: '/groups/{id}', path: () => `/groups/${fixture.cappedGroupId}`, token: () => fixture.pat, status: 403 },
      { name: 'a group edit', method: 'patch', template: '/groups/{id}', path: () => `/groups/${fixture.foreignGroupId}`, token: () => fixture.owner, body: { personalTokenMaxLifetimeDays: 90, description: 'Capped' }, status: 200 },
      { name: 'a cap out of range', method: 'patch', template: '/groups/{id}', path: () => `/groups/${fixture.foreignGroupId}`, token: () => fixture.owner, body: { personalTokenMaxLifetimeDays: 0 }, status: 400 },
      { name: 'a member, not an owner', method: 'patch', template: '/groups/{id}', path: () => `/groups/${fixture.groupId}`, token: () => fixture.patNoEmail, body: { name: 'x' }, status: 403 },
      { name: 'a report of credentials', method: 'post', template: '/credentials/revoke', path: () => '/credentials/revoke', body: { credentials: ['ho_000000000000000000000000000000000000', 'not a token'] }, status: 202 },
      { name: 'an empty report', method: 'post', template: '/credentials/revoke', path: () => '/credentials/revoke', body: { credentials: [] }, status: 400 },
      { name: 'a report as a form', method: 'post', template: '/credentials/revoke', path: () => '/credentials/revoke', body: 'credentials=x', contentType: 'application/x-www-form-urlencoded', status: 415 },
      { name: 'the user (ha_, with email)', method: 'get', template: '/user', path: () => '/user', token: () => fixture.pat, status: 200 },
      { name: 'the user (ho_ openid only, no email)', method: 'get', template: '/user', path: () => '/user', token: () => fixture.openidOnly, status: 200 },
      { name: 'no token', method: 'get', template: '/user', path: () => '/user', status: 401 },

      { name: 'a group’s applications', method: 'get', template: '/groups/{id}/oauth-apps', path: () => `/groups/${fixture.foreignGroupId}/oauth-apps?pageSize=2`, token: () => fixture.owner, status: 200 },
      { name: 'bad pageNumber', method: 'get', template: '/groups/{id}/oauth-apps', path: () => `/groups/${fixture.foreignGroupId}/oauth-apps?pageNumber=0`, token: () => fixture.owner, status: 400 },
      { name: 'no token', method: 'get', template: '/groups/{id}/oauth-apps', path: () => `/groups/${fixture.foreignGroupId}/oauth-apps`, status: 401 },
      { name: 'a member, not an owner', method: 'get', template: '/groups/{id}/oauth-apps', path: () => `/groups/${fixture.groupId}/oauth-apps`, token: () => fixture.patNoEmail, status: 403 },
      { name: 'a read-only token', method: 'get', template: '/groups/{id}/oauth-apps', path: () => `/groups/${fixture.groupId}/oauth-apps`, token: () => fixture.pat, status: 403 },
      { name: 'a group of others', method: 'get', template: '/groups/{id}/oauth-apps', path: () => `/groups/${fixture.foreignGroupId}/oauth-apps`, token: () => fixture.patNoEmail, status: 404 },
      { name: 'a new application', method: 'post', template: '/groups/{id}/oauth-apps', path: () => `/groups/${fixture.foreignGroupId}/oauth-apps`, token: () => fixture.owner, body: newApp, status: 201 },
      { name: 'an unknown field', method: 'post', template: '/groups/{id}/oauth-apps', path: () => `/groups/${fixture.foreignGroupId}/oauth-apps`, token: () => fixture.owner, body: { ...newApp, secret: 'x' }, status: 400 },
      { name: 'a member, not an owner', method: 'post', template: '/groups/{id}/oauth-apps', path: () => `/groups/${fixture.groupId}/oauth-apps`, token: () => fixture.patNoEmail, body: newApp, status: 403 },
      { name: 'a group of others', method: 'post', template: '/groups/{id}/oauth-apps', path: () => `/groups/${fixture.foreignGroupId}/oauth-apps`, token: () => fixture.patNoEmail, body: newApp, status: 404 },
      { name: 'a form body', method: 'post', template: '/groups/{id}/oauth-apps', path: () => `/groups/${fixture.foreignGroupId}/oauth-apps`, token: () => fixture.owner, body: 'name=x', contentType: 'application/x-www-form-urlencoded', status: 415 },
      { name: 'a body above 64 KiB', method: 'post', template: '/groups/{id}/oauth-apps', path: () => `/groups/${fixture.foreignGroupId}/oauth-apps`, token: () => fixture.owner, body: { ...newApp, description: 'd'.repeat(70_000) }, status: 413 },
      { name: 'one application', method: 'get', template: '/oauth-apps/{clientID}', path: () => `/oauth-apps/${fixture.fullApp}`, token: () => fixture.owner, status: 200 },
      { name: 'a member, not an owner', method: 'get', template: '/oauth-apps/{clientID}', path: () => `/oauth-apps/${fixture.memberApp}`, token: () => fixture.patNoEmail, status: 403 },
      { name: 'an unknown application', method: 'get', template: '/oauth-apps/{clientID}', path: () => '/oauth-apps/nothing-here', token: () => fixture.owner, status: 404 },
      { name: 'an edit', method: 'patch', template: '/oauth-apps/{clientID}', path: () => `/oauth-apps/${fixture.app}`, token: () => fixture.owner, body: { description: 'Edited' }, status: 200 },
      { name: 'a bad callback', method: 'patch', template: '/oauth-apps/{clientID}', path: () => `/oauth-apps/${fixture.app}`, token: () => fixture.owner, body: { callbackURL: 'http://doc.example.test/cb' }, status: 400 },
      { name: 'an application of others', method: 'patch', template: '/oauth-apps/{clientID}', path: () => `/oauth-apps/${fixture.app}`, token: () => fixture.patNoEmail, body: { name: 'x' }, status: 404 },
      { name: 'a deletion', method: 'delete', template: '/oauth-apps/{clientID}', path: () => `/oauth-apps/${fixture.doomedApp}`, token: () => fixture.owner, status: 204 },
      { name: 'an unknown application', method: 'delete', template: '/oauth-apps/{clientID}', path: () => `/oauth-apps/${fixture.doomedApp}`, token: () => fixture.owner, status: 404 },
      { name: 'a new public application', method: 'post', template: '/groups/{id}/oauth-apps', path: () => `/groups/${fixture.foreignGroupId}/oauth-apps`, token: () => fixture.owner, body: { ...newApp, type: 'public' }, status: 201 },
      { name: 'all user tokens revoked', method: 'delete', template: '/oauth-apps/{clientID}/grants', path: () => `/oauth-apps/${fixture.app}/grants`, token: () => fixture.owner, status: 204 },
      { name: 'a text body, which no operation takes', method: 'delete', template: '/oauth-apps/{clientID}/grants', path: () => `/oauth-apps/${fixture.app}/grants`, token: () => fixture.owner, body: 'x', contentType: 'text/plain', status: 415 },
      { name: 'a member, not an owner', method: 'delete', template: '/oauth-apps/{clientID}/grants', path: () => `/oauth-apps/${fixture.memberApp}/grants`, token: () => fixture.patNoEmail, status: 403 },
      { name: 'a new secret', method: 'post', template: '/oauth-apps/{clientID}/secrets', path: () => `/oauth-apps/${fixture.app}/secrets`, token: () => fixture.owner, status: 201 },
      { name: 'a third secret', method: 'post', template: '/oauth-apps/{clientID}/secrets', path: () => `/oauth-apps/${fixture.fullApp}/secrets`, token: () => fixture.owner, status: 409 },
      { name: 'a member, not an owner', method: 'post', template: '/oauth-apps/{clientID}/secrets', path: () => `/oauth-apps/${fixture.memberApp}/secrets`, token: () => fixture.patNoEmail, status: 403 },
      { name: 'a revocation', method: 'delete', template: '/oauth-apps/{clientID}/secrets/{secretID}', path: () => `/oauth-apps/${fixture.rotatingApp}/secrets/${fixture.rotatingSecret}`, token: () => fixture.owner, status: 204 },
      { name: 'a revoked secret', method: 'delete', template: '/oauth-apps/{clientID}/secrets/{secretID}', path: () => `/oauth-apps/${fixture.rotatingApp}/secrets/${fixture.rotatingSecret}`, token: () => fixture.owner, status: 404 },
      { name: 'leaving', method: 'delete', template: '/groups/{id}/members/{userId}', path: () => `/groups/${fixture.leftGroupId}/members/${fixture.userId}`, token: () => fixture.patNoEmail, status: 204 },
      { name: 'the last owner leaving', method: 'delete', template: '/groups/{id}/members/{userId}', path: () => `/groups/${fixture.foreignGroupId}/members/${fixture.ownerId}`, token: () => fixture.owner, status: 409 },
      { name: 'a member removing an owner', method: 'delete', template: '/groups/{id}/members/{userId}', path: () => `/groups/${fixture.groupId}/members/${fixture.ownerId}`, token: () => fixture.patNoEmail, status: 403 },
      { name: 'a bad user id', method: 'delete', template: '/groups/{id}/members/{userId}', path: () => `/groups/${fixture.groupId}/members/x`, token: () => fixture.patNoEmail, status: 400 },
      { name: 'a group’s audit log', method: 'get', template: '/groups/{id}/audit-events', path: () => `/groups/${fixture.foreignGroupId}/audit-events?pageSize=2&action=app.create`, token: () => fixture.owner, status: 200 },
      { name: 'a bad since', method: 'get', template: '/groups/{id}/audit-events', path: () => `/groups/${fixture.foreignGroupId}/audit-events?since=today`, token: () => fixture.owner, status: 400 },
      { name: 'a member, not an owner or maintainer', method: 'get', template: '/groups/{id}/audit-events', path: () => `/groups/${fixture.groupId}/audit-events`, token: () => fixture.pat, status: 403 },
      { name: 'a group of others', method: 'get', template: '/groups/{id}/audit-events', path: () => `/groups/${fixture.foreignGroupId}/audit-events`, token: () => fixture.pat, status: 404 },
      { name: 'users', method: 'get', template: '/admin/users', path: () => '/admin/users?q=user&pageSize=2', token: () => fixture.admin, status: 200 },
      { name: 'a token without admin', method: 'get', template: '/admin/users', path: () => '/admin/users', token: () => fixture.pat, status: 403 },
      { name: 'no token', method: 'get', template: '/admin/users', path: () => '/admin/users', status: 401 },
      { name: 'a disable', method: 'post', template: '/admin/users/{id}/disable', path: () => `/admin/users/${fixture.targetId}/disable`, token: () => fixture.admin, status: 200 },
      { name: 'one\'s own account', method: 'post', template: '/admin/users/{id}/disable', path: () => `/admin/users/${fixture.adminId}/disable`, token: () => fixture.admin, status: 409 },
      { name: 'an unknown user', method: 'post', template: '/admin/users/{id}/disable', path: () => '/admin/users/2147483647/disable', token: () => fixture.admin, status: 404 },
      { name: 'an enable', method: 'post', template: '/admin/users/{id}/enable', path: () => `/admin/users/${fixture.targetId}/enable`, token: () => fixture.admin, status: 200 },
      { name: 'a bad id', method: 'post', template: '/admin/users/{id}/enable', path: () => '/admin/users/x/enable', token: () => fixture.admin, status: 400 },
      { name: 'the site log', method: 'get', template: '/admin/audit-events', path: () => '/admin/audit-events?action=user.disable&since=2000-01-01T00:00:00Z', token: () => fixture.admin, status: 200 },
      { name: 'a bad until', method: 'get', template: '/admin/audit-events', path: () => '/admin/audit-events?until=2000-01-01', token: () => fixture.admin, status: 400 },
      { name: 'a token without admin', method: 'get', template: '/admin/audit-events', path: () => '/admin/audit-events', token: () => fixture.owner, status: 403 },
      { name: 'client registration', method: 'get', template: '/admin/client-registration', path: () => '/admin/client-registration', token: () => fixture.admin, status: 200 },
      { name: 'a token without admin', method: 'get', template: '/admin/client-registration', path: () => '/admin/client-registration', token: () => fixture.owner, status: 403 },
      { name: 'client registration off', method: 'put', template: '/admin/client-registration', path: () => '/admin/client-registration', token: () => fixture.admin, body: { metadataDocuments: false, dynamicRegistration: false, group: null }, status: 200 },
      { name: 'a switch on without a group', method: 'put', template: '/admin/client-registration', path: () => '/admin/client-registration', token: () => fixture.admin, body: { metadataDocuments: true, dynamicRegistration: false, group: null }, status: 400 },
      { name: 'a bad secret id', method: 'delete', template: '/oauth-apps/{clientID}/secrets/{secretID}', path: () => `/oauth-apps/${fixture.rotatingApp}/secrets/x`, token: () => fixture.owner, status: 400 },

      { name: 'a group’s webhooks', method: 'get', template: '/groups/{id}/webhooks', path: () => `/groups/${fixture.foreignGroupId}/webhooks?pageSize=1`, token: () => fixture.owner, status: 200 },
      { name: 'bad pageSize', method: 'get', template: '/groups/{id}/webhooks', path: () => `/groups/${fixture.foreignGroupId}/webhooks?pageSize=x`, token: () => fixture.owner, status: 400 },
      { name: 'a member, not an owner', method: 'get', template: '/groups/{id}/webhooks', path: () => `/groups/${fixture.groupId}/webhooks`, token: () => fixture.patNoEmail, status: 403 },
      { name: 'a group of others', method: 'get', template: '/groups/{id}/webhooks', path: () => `/groups/${fixture.foreignGroupId}/webhooks`, token: () => fixture.patNoEmail, status: 404 },
      { name: 'a new webhook', method: 'post', template: '/groups/{id}/webhooks', path: () => `/groups/${fixture.foreignGroupId}/webhooks`, token: () => fixture.owner, body: newHook, status: 201 },
      { name: 'a short secret', method: 'post', template: '/groups/{id}/webhooks', path: () => `/groups/${fixture.foreignGroupId}/webhooks`, token: () => fixture.owner, body: { ...newHook, secret: 'short' }, status: 400 },
      { name: 'an OAuth token', method: 'post', template: '/groups/{id}/webhooks', path: () => `/groups/${fixture.foreignGroupId}/webhooks`, token: () => fixture.oauth, body: newHook, status: 403 },
      { name: 'a group of others', method: 'post', template: '/groups/{id}/webhooks', path: () => `/groups/${fixture.foreignGroupId}/webhooks`, token: () => fixture.patNoEmail, body: newHook, status: 404 },
      { name: 'one webhook', method: 'get', template: '/groups/{id}/webhooks/{hookId}', path: () => `/groups/${fixture.foreignGroupId}/webhooks/${fixture.hookId}`, token: () => fixture.owner, status: 200 },
      { name: 'a bad hookId', method: 'get', template: '/groups/{id}/webhooks/{hookId}', path: () => `/groups/${fixture.foreignGroupId}/webhooks/x`, token: () => fixture.owner, status: 400 },
      { name: 'a webhook of another group', method: 'get', template: '/groups/{id}/webhooks/{hookId}', path: () => `/groups/${fixture.groupId}/webhooks/${fixture.hookId}`, token: () => fixture.owner, status: 404 },
      { name: 'a webhook edit', method: 'patch', template: '/groups/{id}/webhooks/{hookId}', path: () => `/groups/${fixture.foreignGroupId}/webhooks/${fixture.hookId}`, token: () => fixture.owner, body: { events: ['member.added', 'member.removed'], active: false }, status: 200 },
      { name: 'an unknown event', method: 'patch', template: '/groups/{id}/webhooks/{hookId}', path: () => `/groups/${fixture.foreignGroupId}/webhooks/${fixture.hookId}`, token: () => fixture.owner, body: { events: ['push'] }, status: 400 },
      { name: 'a member, not an owner', method: 'patch', template: '/groups/{id}/webhooks/{hookId}', path: () => `/groups/${fixture.groupId}/webhooks/${fixture.hookId}`, token: () => fixture.patNoEmail, body: { active: true }, status: 403 },
      { name: 'a webhook deletion', method: 'delete', template: '/groups/{id}/webhooks/{hookId}', path: () => `/groups/${fixture.foreignGroupId}/webhooks/${fixture.doomedHookId}`, token: () => fixture.owner, status: 204 },
      { name: 'a deleted webhook', method: 'delete', template: '/groups/{id}/webhooks/{hookId}', path: () => `/groups/${fixture.foreignGroupId}/webhooks/${fixture.doomedHookId}`, token: () => fixture.owner, status: 404 },
      { name: 'a webhook’s deliveries', method: 'get', template: '/groups/{id}/webhooks/{hookId}/deliveries', path: () => `/groups/${fixture.foreignGroupId}/webhooks/${fixture.hookId}/deliveries`, token: () => fixture.owner, status: 200 },
      { name: 'bad pageNumber', method: 'get', template: '/groups/{id}/webhooks/{hookId}/deliveries', path: () => `/groups/${fixture.foreignGroupId}/webhooks/${fixture.hookId}/deliveries?pageNumber=0`, token: () => fixture.owner, status: 400 },
      { name: 'a read-only token', method: 'get', template: '/groups/{id}/webhooks/{hookId}/deliveries', path: () => `/groups/${fixture.groupId}/webhooks/${fixture.hookId}/deliveries`, token: () => fixture.pat, status: 403 },
      { name: 'one delivery', method: 'get', template: '/groups/{id}/webhooks/{hookId}/deliveries/{deliveryId}', path: () => `/groups/${fixture.foreignGroupId}/webhooks/${fixture.hookId}/deliveries/${fixture.deliveryId}`, token: () => fixture.owner, status: 200 },
      { name: 'an unknown delivery', method: 'get', template: '/groups/{id}/webhooks/{hookId}/deliveries/{deliveryId}', path: () => `/groups/${fixture.foreignGroupId}/webhooks/${fixture.hookId}/deliveries/9007199254740991`, token: () => fixture.owner, status: 404 },
      { name: 'a bad deliveryId', method: 'get', template: '/groups/{id}/webhooks/{hookId}/deliveries/{deliveryId}', path: () => `/groups/${fixture.foreignGroupId}/webhooks/${fixture.hookId}/deliveries/9007199254740992`, token: () => fixture.owner, status: 400 },
      { name: 'a redelivery', method: 'post', template: '/groups/{id}/webhooks/{hookId}/deliveries/{deliveryId}/attempts', path: () => `/groups/${fixture.foreignGroupId}/webhooks/${fixture.hookId}/deliveries/${fixture.deliveryId}/attempts`, token: () => fixture.owner, status: 202 },
      { name: 'a field in the body', method: 'post', template: '/groups/{id}/webhooks/{hookId}/deliveries/{deliveryId}/attempts', path: () => `/groups/${fixture.foreignGroupId}/webhooks/${fixture.hookId}/deliveries/${fixture.deliveryId}/attempts`, token: () => fixture.owner, body: { url: 'x' }, status: 400 },
      { name: 'a delivery of a deleted webhook', method: 'post', template: '/groups/{id}/webhooks/{hookId}/deliveries/{deliveryId}/attempts', path: () => `/groups/${fixture.foreignGroupId}/webhooks/${fixture.doomedHookId}/deliveries/${fixture.deliveryId}/attempts`, token: () => fixture.owner, status: 404 },

      { name: 'a group’s resources', method: 'get', template: '/groups/{id}/resources', path: () => `/groups/${fixture.foreignGroupId}/resources?pageSize=1`, token: () => fixture.owner, status: 200 },
      { name: 'bad pageNumber', method: 'get', template: '/groups/{id}/resources', path: () => `/groups/${fixture.foreignGroupId}/resources?pageNumber=x`, token: () => fixture.owner, status: 400 },
      { name: 'a member, not an owner', method: 'get', template: '/groups/{id}/resources', path: () => `/groups/${fixture.groupId}/resources`, token: () => fixture.patNoEmail, status: 403 },
      { name: 'a group of others', method: 'get', template: '/groups/{id}/resources', path: () => `/groups/${fixture.foreignGroupId}/resources`, token: () => fixture.patNoEmail, status: 404 },
      { name: 'a new resource', method: 'post', template: '/groups/{id}/resources', path: () => `/groups/${fixture.foreignGroupId}/resources`, token: () => fixture.owner, body: newResource({ tokenFormat: 'jwt' }), status: 201 },
      { name: 'the reserved scope openid', method: 'post', template: '/groups/{id}/resources', path: () => `/groups/${fixture.foreignGroupId}/resources`, token: () => fixture.owner, body: newResource({ scopes: [{ name: 'openid', description: 'x' }] }), status: 400 },
      { name: 'an OAuth token', method: 'post', template: '/groups/{id}/resources', path: () => `/groups/${fixture.foreignGroupId}/resources`, token: () => fixture.oauth, body: newResource(), status: 403 },
      { name: 'a group of others', method: 'post', template: '/groups/{id}/resources', path: () => `/groups/${fixture.foreignGroupId}/resources`, token: () => fixture.patNoEmail, body: newResource(), status: 404 },
      { name: 'one resource', method: 'get', template: '/groups/{id}/resources/{resourceId}', path: () => `/groups/${fixture.foreignGroupId}/resources/${fixture.resourceId}`, token: () => fixture.owner, status: 200 },
      { name: 'a bad resourceId', method: 'get', template: '/groups/{id}/resources/{resourceId}', path: () => `/groups/${fixture.foreignGroupId}/resources/x`, token: () => fixture.owner, status: 400 },
      { name: 'a resource of another group', method: 'get', template: '/groups/{id}/resources/{resourceId}', path: () => `/groups/${fixture.groupId}/resources/${fixture.resourceId}`, token: () => fixture.owner, status: 404 },
      { name: 'a resource edit', method: 'patch', template: '/groups/{id}/resources/{resourceId}', path: () => `/groups/${fixture.foreignGroupId}/resources/${fixture.resourceId}`, token: () => fixture.owner, body: { name: 'Edited tools', tokenFormat: 'jwt' }, status: 200 },
      { name: 'an identifier with a query', method: 'patch', template: '/groups/{id}/resources/{resourceId}', path: () => `/groups/${fixture.foreignGroupId}/resources/${fixture.resourceId}`, token: () => fixture.owner, body: { identifier: 'https://tools.example.test/?q=1' }, status: 400 },
      { name: 'a member, not an owner', method: 'patch', template: '/groups/{id}/resources/{resourceId}', path: () => `/groups/${fixture.groupId}/resources/${fixture.resourceId}`, token: () => fixture.patNoEmail, body: { name: 'x' }, status: 403 },
      { name: 'a new secret', method: 'post', template: '/groups/{id}/resources/{resourceId}/secret', path: () => `/groups/${fixture.foreignGroupId}/resources/${fixture.resourceId}/secret`, token: () => fixture.owner, status: 201 },
      { name: 'a field in the body', method: 'post', template: '/groups/{id}/resources/{resourceId}/secret', path: () => `/groups/${fixture.foreignGroupId}/resources/${fixture.resourceId}/secret`, token: () => fixture.owner, body: { secret: 'x' }, status: 400 },
      { name: 'an OAuth token', method: 'post', template: '/groups/{id}/resources/{resourceId}/secret', path: () => `/groups/${fixture.foreignGroupId}/resources/${fixture.resourceId}/secret`, token: () => fixture.oauth, status: 403 },
      { name: 'a resource deletion', method: 'delete', template: '/groups/{id}/resources/{resourceId}', path: () => `/groups/${fixture.foreignGroupId}/resources/${fixture.doomedResourceId}`, token: () => fixture.owner, status: 204 },
      { name: 'a deleted resource', method: 'delete', template: '/groups/{id}/resources/{resourceId}', path: () => `/groups/${fixture.foreignGroupId}/resources/${fixture.doomedResourceId}`, token: () => fixture.owner, status: 404 },
    ];

    for (const c of cases) {
      it(`${c.method.toUpperCase()} ${c.template} ${c.status}: ${c.name}`, async () => {
        const body = c.body === undefined ? undefined : typeof c.body === 'string' ? c.body : JSON.stringify(c.body);
        const res = await call(idp, `/apis/v2${c.path()}`, {
          token: c.token?.(),
          method: c.method.toUpperCase(),
          ...(body === undefined ? {} : { headers: { 'content-type': c.contentType ?? 'application/json' }, body }),
        });
        expect(res.status, res.text).to.equal(c.status);
        expectDocumented(c.method, c.template, res);
      });
    }

    it('states the limits the API enforces on its parameters', async () => {
      const limitOf = (template: string, name: string) => doc.paths[template].get.parameters.find((p: Json) => p.name === name).schema;
      const status = async (path: string) => (await call(idp, `/apis/v2${path}`, { token: fixture.pat })).status;
      const pageNumber = limitOf('/groups', 'pageNumber');
      const pageSize = limitOf('/groups', 'pageSize');
      const filter = limitOf('/groups', 'filter');
      const id = limitOf('/groups/{id}', 'id');
      expect(await status(`/groups?pageNumber=${pageNumber.maximum}`)).to.equal(200);
      expect(await status(`/groups?pageNumber=${pageNumber.maximum + 1}`)).to.equal(400);
      expect(await status(`/groups?pageSize=${pageSize.maximum}`)).to.equal(200);
      expect(await status(`/groups?pageSize=${pageSize.maximum + 1}`)).to.equal(400);
      expect(await status(`/groups?pageSize=${pageSize.minimum - 1}`)).to.equal(400);
      expect(await status(`/groups?filter=${'f'.repeat(filter.maxLength)}`)).to.equal(200);
      expect(await status(`/groups?filter=${'f'.repeat(filter.maxLength + 1)}`)).to.equal(400);
      expect(await status(`/groups/${id.maximum}`), 'the largest id is a valid one, of no group').to.equal(404);
      expect(await status(`/groups/${id.maximum + 1}`)).to.equal(400);
      const page = (await call(idp, '/apis/v2/groups', { token: fixture.pat })).body;
      expect(page).to.include({ pageNumber: pageNumber.default, pageSize: pageSize.default });
    });

    it('covers a success (200, 201, 202 or 204) of every documented operation', () => {
      for (const [template, operations] of Object.entries(doc.paths as Json)) {
        for (const method of Object.keys(operations as Json)) {
          const covered = cases.some((c) => c.template === template && c.method === method && [200, 201, 202, 204].includes(c.status));
          expect(covered, `a contract case for ${method.toUpperCase()} ${template}`).to.equal(true);
        }
      }
    });
  });
});
