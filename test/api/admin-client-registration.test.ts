import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { requireUserById, setSiteAdmin } from '../../src/services/admin.js';
import { clientRegistrationSettings } from '../../src/services/client-registration/settings.js';
import { call, expectApiError } from '../helpers/api.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { makeGroup, makeUser, personalToken, type TestUser } from '../helpers/factories.js';

const CLI = { userId: 0, ip: null, admin: true };
const unique = () => randomBytes(4).toString('hex');
const PATH = '/apis/v2/admin/client-registration';

describeEachProfile('API: /admin/client-registration', (profile) => {
  const idp = useIdp(profile);
  let admin: TestUser;
  let token: string;

  before(async () => {
    admin = await makeUser(idp.db, { username: `root-${unique()}` });
    await setSiteAdmin(idp.db, CLI, admin, true);
    token = await personalToken(idp.db, admin.id, { scopes: ['admin'] });
  });

  const put = (body: unknown, as = token) => call(idp, PATH, { method: 'PUT', token: as, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

  it('reads both ways off and no group until an administrator sets them, with the registration endpoint', async () => {
    const res = await call(idp, PATH, { token });
    expect(res.status, res.text).to.equal(200);
    expect(res.body).to.deep.equal({ data: { metadataDocuments: false, dynamicRegistration: false, group: null, registrationEndpoint: `${idp.url}/login/oauth/register` } });
  });

  it('sets the switches and the group by its path, recorded in the site audit log, and reads them back', async () => {
    const owner = await makeUser(idp.db);
    const group = await makeGroup(idp.db, owner.id);
    const res = await put({ metadataDocuments: true, dynamicRegistration: false, group: group.path });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.data).to.deep.include({ metadataDocuments: true, dynamicRegistration: false, group: group.path });
    expect((await call(idp, PATH, { token })).body).to.deep.equal(res.body);
    const audit = await idp.db('audit_events').where({ action: 'client_registration.update' }).orderBy('id', 'desc').first();
    expect(audit).to.include({ actor_id: admin.id, target: group.path });
    expect(JSON.parse(audit.details)).to.deep.equal({ metadataDocuments: true, dynamicRegistration: false });

    const off = await put({ metadataDocuments: false, dynamicRegistration: false, group: null });
    expect(off.status, off.text).to.equal(200);
    expect(off.body.data).to.deep.include({ metadataDocuments: false, dynamicRegistration: false, group: null });
  });

  it('answers 400 naming the field for every bad input, and changes nothing', async () => {
    const owner = await makeUser(idp.db);
    const group = await makeGroup(idp.db, owner.id);
    const cases: Array<[unknown, string]> = [
      [{ metadataDocuments: true, dynamicRegistration: false, group: null }, 'group is required while client registration is on'],
      [{ metadataDocuments: false, dynamicRegistration: true, group: '' }, 'group is required while client registration is on'],
      [{ metadataDocuments: true, dynamicRegistration: true, group: `nothing-${unique()}` }, 'group must be the path of an existing group'],
      [{ metadataDocuments: true, dynamicRegistration: true, group: 'g'.repeat(101) }, 'group must be at most 100 characters'],
      [{ metadataDocuments: 'yes', dynamicRegistration: false, group: group.path }, 'metadataDocuments'],
      [{ metadataDocuments: true, dynamicRegistration: 1, group: group.path }, 'dynamicRegistration'],
      [{ metadataDocuments: true, dynamicRegistration: true, group: 7 }, 'group must be the path of a group, or null'],
      [{ metadataDocuments: true, dynamicRegistration: true }, 'group'],
      [{ dynamicRegistration: true, group: group.path }, 'metadataDocuments'],
      [{ metadataDocuments: true, dynamicRegistration: true, group: group.path, extra: 1 }, 'extra'],
      [[], 'body'],
      ['on', 'body'],
    ];
    for (const [body, names] of cases) {
      const res = await put(body);
      expectApiError(res, 400, 'invalid_request');
      expect(res.body.error_description, JSON.stringify(body)).to.contain(names);
    }
    const malformed = await call(idp, PATH, { method: 'PUT', token, headers: { 'content-type': 'application/json' }, body: '{' });
    expectApiError(malformed, 400, 'invalid_request');
    expect(await clientRegistrationSettings(idp.db)).to.deep.include({ metadataDocuments: false, dynamicRegistration: false });
  });

  it('is refused without a token, without the admin scope, and to one who is no longer a site administrator', async () => {
    const body = { metadataDocuments: false, dynamicRegistration: false, group: null };
    expectApiError(await call(idp, PATH), 401, 'unauthorized');
    expect((await call(idp, PATH, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).status).to.equal(401);
    const readOnly = await personalToken(idp.db, admin.id, { scopes: ['groups:read-write'] });
    expectApiError(await call(idp, PATH, { token: readOnly }), 403, 'insufficient_scope');
    expectApiError(await put(body, readOnly), 403, 'insufficient_scope');
    const former = await makeUser(idp.db);
    await setSiteAdmin(idp.db, CLI, former, true);
    const formerToken = await personalToken(idp.db, former.id, { scopes: ['admin'] });
    await setSiteAdmin(idp.db, CLI, await requireUserById(idp.db, former.id), false);
    expectApiError(await call(idp, PATH, { token: formerToken }), 403, 'forbidden');
    expectApiError(await put(body, formerToken), 403, 'forbidden');
  });
});
