import { expect } from 'chai';
import type { GroupRow } from '../../src/db/groups.js';
import { changeRole } from '../../src/services/groups.js';
import { digest, isWellFormedToken } from '../../src/tokens.js';
import { apiChallenge, call, escapeRegExp, expectApiError, expectInvalidToken, type ApiResponse } from '../helpers/api.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { Browser } from '../helpers/browser.js';
import { CALLBACK, groupAccess, joinGroup, makeApp, makeGroup, makeUser, ownerWithToken, personalToken, type TestUser } from '../helpers/factories.js';
import { authorize, oauthTokens, tokenRequest } from '../helpers/oauth.js';

const VALID = { name: 'Deploy Bot', homepageURL: 'https://deploy.example.test', description: 'Ships things', callbackURL: CALLBACK };

describeEachProfile('API: OAuth applications', (profile) => {
  const idp = useIdp(profile);
  const count = async (table: string, where: Record<string, unknown>) =>
    Number(((await idp.db(table).where(where).count({ n: '*' }).first()) as { n: number | string }).n);
  const appRow = (clientId: string) => idp.db('oauth_apps').where({ client_id: clientId }).first();
  const secretRows = async (clientId: string) => {
    const app = await appRow(clientId);
    return app ? ((await idp.db('oauth_app_secrets').where({ app_id: app.id }).orderBy('id')) as Array<{ id: number; digest: string }>) : [];
  };

  /** A JSON request with a token: the way a script calls the API. */
  function api(token: string, method: string, path: string, body?: unknown): Promise<ApiResponse> {
    return call(idp, `/apis/v2${path}`, {
      token,
      method,
      ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
    });
  }

  /** An owner with a read-write personal token, and their group. */
  const owned = () => ownerWithToken(idp.db);

  async function join(group: GroupRow, owner: TestUser, role: 'owner' | 'maintainer' | 'member'): Promise<{ user: TestUser; token: string }> {
    const user = await joinGroup(idp.db, group, owner, role);
    return { user, token: await personalToken(idp.db, user.id, { scopes: ['groups:read-write'] }) };
  }

  async function created(token: string, groupId: number, fields: Record<string, unknown> = VALID) {
    const res = await api(token, 'POST', `/groups/${groupId}/oauth-apps`, fields);
    expect(res.status, res.text).to.equal(201);
    return res.body.data as { clientID: string; clientSecret: string; secretId: number; signOutRedirectURLs: string[] };
  }

  async function codeFor(clientId: string, user: TestUser): Promise<string> {
    const callback = await authorize(new Browser(idp.url), { clientId, redirectUri: CALLBACK, scope: 'groups:read-only' }, user);
    return callback.searchParams.get('code')!;
  }

  const exchange = (clientId: string, clientSecret: string, code: string) =>
    tokenRequest(idp.url, { query: { client_id: clientId, client_secret: clientSecret, code, redirect_uri: CALLBACK } });

  describe('an owner', () => {
    it('creates an application: 201, the secret once, its id, and a Location', async () => {
      const { group, token } = await owned();
      const res = await api(token, 'POST', `/groups/${group.id}/oauth-apps`, VALID);
      expect(res.status, res.text).to.equal(201);
      expect(res.headers.get('cache-control')).to.include('no-store');
      const data = res.body.data;
      expect(data).to.include({ ...VALID, groupId: group.id });
      expect(isWellFormedToken(data.clientSecret, 'hs_')).to.equal(true);
      expect(res.headers.get('location')).to.equal(`${idp.url}/apis/v2/oauth-apps/${data.clientID}`);
      const [secret] = await secretRows(data.clientID);
      expect(secret!.digest).to.equal(digest(data.clientSecret));
      expect(data.secretId).to.equal(secret!.id);
      expect(data.secrets).to.deep.equal([{ id: secret!.id, lastFour: data.clientSecret.slice(-4), createdAt: data.createdAt, lastUsedAt: null }]);
      expect(Object.keys(data).sort()).to.deep.equal(
        ['backchannelLogoutURL', 'callbackURL', 'clientCredentials', 'clientID', 'clientSecret', 'createdAt', 'description', 'deviceFlow', 'groupId', 'homepageURL', 'name', 'registeredAutomatically', 'requirePushedAuthorizationRequests', 'secretId', 'secrets', 'signOutRedirectURLs', 'type', 'updatedAt'],
      );
      expect(data).to.include({ deviceFlow: false, requirePushedAuthorizationRequests: false });
    });

    it('turns deviceFlow and requirePushedAuthorizationRequests on at creation and off by an edit, keeping them when left out', async () => {
      const { group, token } = await owned();
      const app = await created(token, group.id, { ...VALID, deviceFlow: true, requirePushedAuthorizationRequests: true });
      const read = await api(token, 'GET', `/oauth-apps/${app.clientID}`);
      expect(read.body.data).to.include({ deviceFlow: true, requirePushedAuthorizationRequests: true });
      const renamed = await api(token, 'PATCH', `/oauth-apps/${app.clientID}`, { name: 'Renamed' });
      expect(renamed.body.data).to.include({ deviceFlow: true, requirePushedAuthorizationRequests: true });
      const off = await api(token, 'PATCH', `/oauth-apps/${app.clientID}`, { deviceFlow: false });
      expect(off.body.data).to.include({ deviceFlow: false, requirePushedAuthorizationRequests: true });
      const wrong = await api(token, 'PATCH', `/oauth-apps/${app.clientID}`, { deviceFlow: 'yes' });
      expectApiError(wrong, 400, 'invalid_request');
      expect(wrong.body.error_description).to.include('deviceFlow');
    });

    it('creates without a description (it defaults to empty)', async () => {
      const { group, token } = await owned();
      const { description: _d, ...rest } = VALID;
      const res = await api(token, 'POST', `/groups/${group.id}/oauth-apps`, rest);
      expect(res.status, res.text).to.equal(201);
      expect(res.body.data.description).to.equal('');
    });

    it('reads an application with its secrets masked, never the secret', async () => {
      const { group, token } = await owned();
      const app = await created(token, group.id);
      const res = await api(token, 'GET', `/oauth-apps/${app.clientID}`);
      expect(res.status, res.text).to.equal(200);
      expect(res.body.data).to.include({ clientID: app.clientID, ...VALID });
      expect(res.body.data).not.to.have.property('clientSecret');
      expect(res.body.data.secrets).to.deep.equal([
        { id: app.secretId, lastFour: app.clientSecret.slice(-4), createdAt: res.body.data.createdAt, lastUsedAt: null },
      ]);
      expect(res.text).not.to.include(app.clientSecret);
    });

    it('lists the group’s applications, paginated in ascending order with a Link header, without secrets', async () => {
      const { group, token } = await owned();
      const apps = [];
      for (const name of ['One', 'Two', 'Three']) apps.push(await created(token, group.id, { ...VALID, name }));
      const first = await api(token, 'GET', `/groups/${group.id}/oauth-apps?pageSize=2`);
      expect(first.status, first.text).to.equal(200);
      expect(first.body).to.deep.include({ pageNumber: 1, pageSize: 2 });
      expect(first.body.data.total).to.equal(3);
      expect(first.body.data.items.map((a: { name: string }) => a.name)).to.deep.equal(['One', 'Two']);
      expect(first.headers.get('link')).to.include('rel="next"').and.include(`${idp.url}/apis/v2/groups/${group.id}/oauth-apps?pageNumber=2&pageSize=2`);
      const second = await api(token, 'GET', `/groups/${group.id}/oauth-apps?pageSize=2&pageNumber=2`);
      expect(second.body.data.items.map((a: { clientID: string }) => a.clientID)).to.deep.equal([apps[2]!.clientID]);
      const past = await api(token, 'GET', `/groups/${group.id}/oauth-apps?pageNumber=9`);
      expect(past.status).to.equal(200);
      expect(past.body.data).to.deep.equal({ total: 3, items: [] });
      for (const a of first.body.data.items) expect(a).not.to.have.any.keys('clientSecret', 'secrets');
      expectApiError(await api(token, 'GET', `/groups/${group.id}/oauth-apps?pageSize=51`), 400, 'invalid_request');
    });

    it('edits each of the four fields, keeping the ones left out', async () => {
      const { group, token } = await owned();
      const app = await created(token, group.id);
      const changes = { name: 'Renamed', homepageURL: 'https://new.example.test', description: 'New words', callbackURL: 'https://new.example.test/cb' };
      let expected = { ...VALID };
      for (const [field, value] of Object.entries(changes)) {
        const res = await api(token, 'PATCH', `/oauth-apps/${app.clientID}`, { [field]: value });
        expect(res.status, res.text).to.equal(200);
        expected = { ...expected, [field]: value };
        expect(res.body.data).to.include(expected);
        expect(res.body.data.secrets).to.have.length(1);
      }
      const row = await appRow(app.clientID);
      expect(row).to.include({ name: 'Renamed', homepage_url: changes.homepageURL, description: 'New words', callback_url: changes.callbackURL });
    });

    it('creates with sign-out redirect URLs and reads them back, a repeated one once', async () => {
      const { group, token } = await owned();
      const urls = ['https://deploy.example.test/signed-out', 'http://localhost:8080/bye'];
      const res = await api(token, 'POST', `/groups/${group.id}/oauth-apps`, { ...VALID, signOutRedirectURLs: [...urls, urls[0]] });
      expect(res.status, res.text).to.equal(201);
      expect(res.body.data.signOutRedirectURLs).to.deep.equal(urls);
      expect((await api(token, 'GET', `/oauth-apps/${res.body.data.clientID}`)).body.data.signOutRedirectURLs).to.deep.equal(urls);
    });

    it('creates with no sign-out redirect URLs when the field is left out', async () => {
      const { group, token } = await owned();
      const app = await created(token, group.id);
      expect(app.signOutRedirectURLs).to.deep.equal([]);
    });

    it('replaces the sign-out redirect URLs on an edit that names them, and keeps them on one that does not', async () => {
      const { group, token } = await owned();
      const app = await created(token, group.id, { ...VALID, signOutRedirectURLs: ['https://deploy.example.test/a'] });
      const replaced = await api(token, 'PATCH', `/oauth-apps/${app.clientID}`, { signOutRedirectURLs: ['https://deploy.example.test/b'] });
      expect(replaced.status, replaced.text).to.equal(200);
      expect(replaced.body.data.signOutRedirectURLs).to.deep.equal(['https://deploy.example.test/b']);
      const renamed = await api(token, 'PATCH', `/oauth-apps/${app.clientID}`, { name: 'Renamed' });
      expect(renamed.body.data.signOutRedirectURLs).to.deep.equal(['https://deploy.example.test/b']);
      const emptied = await api(token, 'PATCH', `/oauth-apps/${app.clientID}`, { signOutRedirectURLs: [] });
      expect(emptied.body.data.signOutRedirectURLs).to.deep.equal([]);
    });

    it('moves updatedAt on an edit', async () => {
      const { group, token } = await owned();
      const app = await created(token, group.id);
      const before = (await api(token, 'GET', `/oauth-apps/${app.clientID}`)).body.data.updatedAt;
      await new Promise((resolve) => setTimeout(resolve, 20));
      const res = await api(token, 'PATCH', `/oauth-apps/${app.clientID}`, { name: 'Later' });
      expect(Date.parse(res.body.data.updatedAt)).to.be.greaterThan(Date.parse(before));
      expect((await api(token, 'GET', `/oauth-apps/${app.clientID}`)).body.data.updatedAt).to.equal(res.body.data.updatedAt);
    });

    it('leaves updatedAt and the audit log alone on an edit that changes nothing', async () => {
      const { group, token } = await owned();
      const app = await created(token, group.id, { ...VALID, signOutRedirectURLs: ['https://deploy.example.test/bye'] });
      const before = (await api(token, 'GET', `/oauth-apps/${app.clientID}`)).body.data;
      const audit = await count('audit_events', { group_id: group.id });
      await new Promise((resolve) => setTimeout(resolve, 20));
      for (const body of [{}, { name: VALID.name, callbackURL: CALLBACK, signOutRedirectURLs: ['https://deploy.example.test/bye'], deviceFlow: false }]) {
        const res = await api(token, 'PATCH', `/oauth-apps/${app.clientID}`, body);
        expect(res.status, res.text).to.equal(200);
        expect(res.body.data).to.deep.equal(before);
      }
      expect(await count('audit_events', { group_id: group.id })).to.equal(audit);
    });

    it('deletes an application: 204, then 404', async () => {
      const { group, token } = await owned();
      const app = await created(token, group.id);
      const res = await api(token, 'DELETE', `/oauth-apps/${app.clientID}`);
      expect(res.status, res.text).to.equal(204);
      expect(res.text).to.equal('');
      expectApiError(await api(token, 'GET', `/oauth-apps/${app.clientID}`), 404, 'not_found');
      expect(await appRow(app.clientID)).to.equal(undefined);
    });

  });

  describe('an application’s OAuth token (ho_), whatever its scope', () => {
    const ATTACKER_CALLBACK = 'https://attacker.example.test/cb';

    /**
     * The owner of a group whose application people have authorized, and a third-party
     * application (of another group) the owner authorized with groups:read-write.
     */
    async function ownerAndThirdParty() {
      const { owner, group, token } = await owned();
      const target = await created(token, group.id);
      const otherOwner = await makeUser(idp.db);
      const third = await makeApp(idp.db, otherOwner.id, (await makeGroup(idp.db, otherOwner.id)).id);
      const { accessToken } = await oauthTokens(idp.url, { clientId: third.clientId, clientSecret: third.clientSecret, redirectUri: CALLBACK }, owner, 'groups:read-write');
      return { owner, group, token, target, ho: accessToken };
    }

    it('cannot point another application at its own callback, mint its secret, or make any other change: 403 personal_token_required', async () => {
      const { group, target, ho } = await ownerAndThirdParty();
      const before = await appRow(target.clientID);
      const audit = await count('audit_events', { group_id: group.id });
      const requests: Array<[string, string, unknown?]> = [
        ['PATCH', `/oauth-apps/${target.clientID}`, { callbackURL: ATTACKER_CALLBACK }],
        ['PATCH', `/oauth-apps/${target.clientID}`, { signOutRedirectURLs: [ATTACKER_CALLBACK] }],
        ['POST', `/oauth-apps/${target.clientID}/secrets`, {}],
        ['DELETE', `/oauth-apps/${target.clientID}/secrets/${target.secretId}`],
        ['DELETE', `/oauth-apps/${target.clientID}/grants`],
        ['DELETE', `/oauth-apps/${target.clientID}`],
        ['POST', `/groups/${group.id}/oauth-apps`, { ...VALID, callbackURL: ATTACKER_CALLBACK }],
      ];
      for (const [method, path, body] of requests) {
        const res = await api(ho, method, path, body);
        expectApiError(res, 403, 'personal_token_required');
        expect(res.body.error_description, `${method} ${path}`).to.match(/personal access token \(ha_\)/);
        expect(res.text).not.to.match(/hs_[0-9A-Za-z]{36}/);
      }
      expect(await appRow(target.clientID)).to.deep.equal(before);
      expect(await secretRows(target.clientID)).to.have.length(1);
      expect(await count('oauth_apps', { group_id: group.id })).to.equal(1);
      expect(await count('audit_events', { group_id: group.id })).to.equal(audit);
    });

    it('still reads the group’s applications, which changes nothing', async () => {
      const { group, target, ho } = await ownerAndThirdParty();
      expect((await api(ho, 'GET', `/groups/${group.id}/oauth-apps`)).status).to.equal(200);
      const read = await api(ho, 'GET', `/oauth-apps/${target.clientID}`);
      expect(read.status, read.text).to.equal(200);
      expect(read.body.data.callbackURL).to.equal(CALLBACK);
    });

    it('leaves the owner’s personal access token (ha_) able to change the callback and mint a secret', async () => {
      const { target, token } = await ownerAndThirdParty();
      const edited = await api(token, 'PATCH', `/oauth-apps/${target.clientID}`, { callbackURL: 'https://new.example.test/cb' });
      expect(edited.status, edited.text).to.equal(200);
      expect(edited.body.data.callbackURL).to.equal('https://new.example.test/cb');
      const secret = await api(token, 'POST', `/oauth-apps/${target.clientID}/secrets`, {});
      expect(secret.status, secret.text).to.equal(201);
      expect(isWellFormedToken(secret.body.data.secret, 'hs_')).to.equal(true);
    });
  });

  describe('a new callback URL', () => {
    const NEW_CALLBACK = 'http://127.0.0.1:9999/moved/callback';

    /** Where the person's next authorization of the application stops: the consent page, or a code straight back at the callback. */
    async function nextStep(browser: Browser, clientId: string, redirectUri: string): Promise<'consent' | 'code'> {
      const page = await browser.follow(`/login/oauth/authorize?${new URLSearchParams({ client_id: clientId, redirect_uri: redirectUri, state: 's', scope: 'groups:read-only' })}`, redirectUri);
      if (page.status === 200 && page.text.includes('/confirm"')) return 'consent';
      expect(new URL(page.headers.get('location') ?? '', idp.url).searchParams.get('code'), `${page.status} ${page.text.slice(0, 200)}`).to.be.a('string');
      return 'code';
    }

    it('ends every grant of the application, with its tokens, so each user consents again; the audit log says so', async () => {
      const { group, token } = await owned();
      const app = await created(token, group.id);
      const person = await makeUser(idp.db);
      const client = { clientId: app.clientID, clientSecret: app.clientSecret, redirectUri: CALLBACK };
      const { accessToken, refreshToken, browser } = await oauthTokens(idp.url, client, person);
      // Authorized once, the person is not asked again.
      expect(await nextStep(browser, app.clientID, CALLBACK)).to.equal('code');

      const edited = await api(token, 'PATCH', `/oauth-apps/${app.clientID}`, { callbackURL: NEW_CALLBACK });
      expect(edited.status, edited.text).to.equal(200);

      expect(await nextStep(browser, app.clientID, NEW_CALLBACK)).to.equal('consent');
      expectInvalidToken(idp, await api(accessToken, 'GET', '/user'));
      const refreshed = await tokenRequest(idp.url, { form: { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: app.clientID, client_secret: app.clientSecret } });
      expect(refreshed.body.error, refreshed.text).to.equal('invalid_grant');
      expect(await count('user_grants', { client_id: app.clientID })).to.equal(0);
      const [update] = (await idp.db('audit_events').where({ group_id: group.id, action: 'app.update' })) as Array<{ details: string }>;
      expect(JSON.parse(update!.details)).to.deep.equal({ changes: { callbackURL: { from: CALLBACK, to: NEW_CALLBACK } }, authorizationsEnded: 1 });
    });

    it('leaves the grants alone on an edit that keeps the callback', async () => {
      const { group, token } = await owned();
      const app = await created(token, group.id);
      const person = await makeUser(idp.db);
      const { browser } = await oauthTokens(idp.url, { clientId: app.clientID, clientSecret: app.clientSecret, redirectUri: CALLBACK }, person);
      expect((await api(token, 'PATCH', `/oauth-apps/${app.clientID}`, { name: 'Renamed', callbackURL: CALLBACK })).status).to.equal(200);
      expect(await nextStep(browser, app.clientID, CALLBACK)).to.equal('code');
      expect(await count('user_grants', { client_id: app.clientID })).to.equal(1);
    });
  });

  describe('secrets', () => {
    it('makes a second secret, shown once: 201 {id, secret, lastFour, createdAt}', async () => {
      const { group, token } = await owned();
      const app = await created(token, group.id);
      const res = await api(token, 'POST', `/oauth-apps/${app.clientID}/secrets`);
      expect(res.status, res.text).to.equal(201);
      expect(res.headers.get('cache-control')).to.include('no-store');
      expect(Object.keys(res.body.data).sort()).to.deep.equal(['createdAt', 'id', 'lastFour', 'secret']);
      expect(isWellFormedToken(res.body.data.secret, 'hs_')).to.equal(true);
      expect(res.body.data.lastFour).to.equal(res.body.data.secret.slice(-4));
      expect((await secretRows(app.clientID)).map((s) => s.digest)).to.deep.equal([digest(app.clientSecret), digest(res.body.data.secret)]);
      const read = await api(token, 'GET', `/oauth-apps/${app.clientID}`);
      expect(read.body.data.secrets.map((s: { id: number }) => s.id)).to.deep.equal([app.secretId, res.body.data.id]);
      expect(read.text).not.to.include(res.body.data.secret);
    });

    it('accepts an empty JSON object as the body, and refuses a field', async () => {
      const { group, token } = await owned();
      const app = await created(token, group.id);
      expect((await api(token, 'POST', `/oauth-apps/${app.clientID}/secrets`, {})).status).to.equal(201);
      const res = await api(token, 'POST', `/oauth-apps/${app.clientID}/secrets`, { name: 'x' });
      expectApiError(res, 400, 'invalid_request');
      expect(res.body.error_description).to.include('"name"');
    });

    it('refuses a third secret with 409 and makes none', async () => {
      const { group, token } = await owned();
      const app = await created(token, group.id);
      expect((await api(token, 'POST', `/oauth-apps/${app.clientID}/secrets`)).status).to.equal(201);
      const res = await api(token, 'POST', `/oauth-apps/${app.clientID}/secrets`);
      expectApiError(res, 409, 'conflict');
      expect(res.body.error_description).to.include('at most 2');
      expect(await secretRows(app.clientID)).to.have.length(2);
    });

    it('refuses two requests at once for the last free slot: exactly one wins', async () => {
      const { group, token } = await owned();
      const app = await created(token, group.id);
      const results = await Promise.all([1, 2, 3].map(() => api(token, 'POST', `/oauth-apps/${app.clientID}/secrets`)));
      expect(results.map((r) => r.status).sort()).to.deep.equal([201, 409, 409]);
      expect(await secretRows(app.clientID)).to.have.length(2);
    });

    it('revokes one of two: the revoked one is 401 invalid_client, the other still works', async () => {
      const { owner, group, token } = await owned();
      const app = await created(token, group.id);
      const second = (await api(token, 'POST', `/oauth-apps/${app.clientID}/secrets`)).body.data;
      const res = await api(token, 'DELETE', `/oauth-apps/${app.clientID}/secrets/${app.secretId}`);
      expect(res.status, res.text).to.equal(204);
      const revoked = await exchange(app.clientID, app.clientSecret, await codeFor(app.clientID, owner));
      expect(revoked.status).to.equal(401);
      expect(revoked.body.error).to.equal('invalid_client');
      const ok = await exchange(app.clientID, second.secret, await codeFor(app.clientID, owner));
      expect(ok.status, JSON.stringify(ok.body)).to.equal(200);
      expect((await api(token, 'GET', `/oauth-apps/${app.clientID}`)).body.data.secrets.map((s: { id: number }) => s.id)).to.deep.equal([second.id]);
    });

    it('answers an unknown secret, and a secret of another application, with 404', async () => {
      const { group, token } = await owned();
      const app = await created(token, group.id);
      const other = await created(token, group.id, { ...VALID, name: 'Other' });
      expectApiError(await api(token, 'DELETE', `/oauth-apps/${app.clientID}/secrets/2147483647`), 404, 'not_found');
      expectApiError(await api(token, 'DELETE', `/oauth-apps/${app.clientID}/secrets/${other.secretId}`), 404, 'not_found');
      expect(await secretRows(other.clientID)).to.have.length(1);
    });

    for (const id of ['abc', '0', '-1', '1.5', '99999999999']) {
      it(`answers the secret id ${id} with 400 naming secretID`, async () => {
        const { group, token } = await owned();
        const app = await created(token, group.id);
        const res = await api(token, 'DELETE', `/oauth-apps/${app.clientID}/secrets/${id}`);
        expectApiError(res, 400, 'invalid_request');
        expect(res.body.error_description).to.include('secretID');
      });
    }
  });

  describe('deleting stops everything issued to the application at once', () => {
    it('makes its access token 401, its refresh token and secret invalid_client, and an earlier code useless', async () => {
      const { owner, group, token } = await owned();
      const { user } = await join(group, owner, 'member');
      const app = await created(token, group.id);
      const client = { owner, group, clientId: app.clientID, clientSecret: app.clientSecret, redirectUri: CALLBACK };
      const tokens = await oauthTokens(idp.url, client, user, 'groups:read-only');
      const pendingCode = await codeFor(app.clientID, owner);
      expect((await call(idp, '/apis/v2/groups', { token: tokens.accessToken })).status).to.equal(200);

      expect((await api(token, 'DELETE', `/oauth-apps/${app.clientID}`)).status).to.equal(204);

      expectInvalidToken(idp, await call(idp, '/apis/v2/groups', { token: tokens.accessToken }));
      const refreshed = await tokenRequest(idp.url, { query: { grant_type: 'refresh_token', refresh_token: tokens.refreshToken, client_id: app.clientID, client_secret: app.clientSecret } });
      expect(refreshed.status).to.equal(401);
      expect(refreshed.body.error).to.equal('invalid_client');
      const redeemed = await exchange(app.clientID, app.clientSecret, pendingCode);
      expect(redeemed.status).to.equal(401);
      expect(redeemed.body.error).to.equal('invalid_client');
      expect(redeemed.body).not.to.have.property('access_token');
      expect(await idp.idp.provider.AccessToken.find(tokens.accessToken)).to.equal(undefined);
      expect(await idp.idp.provider.RefreshToken.find(tokens.refreshToken)).to.equal(undefined);
    });
  });

  describe('bad input', () => {
    const cases: Array<{ name: string; body: unknown; field: string }> = [
      { name: 'no name', body: { ...VALID, name: undefined }, field: 'name' },
      { name: 'an empty name', body: { ...VALID, name: '  ' }, field: 'name' },
      { name: 'a name of 101 characters', body: { ...VALID, name: 'n'.repeat(101) }, field: 'name' },
      { name: 'a number for a name', body: { ...VALID, name: 5 }, field: 'name' },
      { name: 'null for a description', body: { ...VALID, description: null }, field: 'description' },
      { name: 'a description of 401 characters', body: { ...VALID, description: 'd'.repeat(401) }, field: 'description' },
      { name: 'no homepage', body: { ...VALID, homepageURL: undefined }, field: 'homepageURL' },
      { name: 'a relative homepage', body: { ...VALID, homepageURL: 'deploy.example.test' }, field: 'homepageURL' },
      { name: 'an ftp homepage', body: { ...VALID, homepageURL: 'ftp://deploy.example.test' }, field: 'homepageURL' },
      { name: 'a javascript: homepage', body: { ...VALID, homepageURL: 'javascript:alert(1)' }, field: 'homepageURL' },
      { name: 'an array for a homepage', body: { ...VALID, homepageURL: ['https://a.example.test'] }, field: 'homepageURL' },
      { name: 'no callback', body: { ...VALID, callbackURL: undefined }, field: 'callbackURL' },
      { name: 'a relative callback', body: { ...VALID, callbackURL: '/callback' }, field: 'callbackURL' },
      { name: 'an http callback off loopback', body: { ...VALID, callbackURL: 'http://deploy.example.test/cb' }, field: 'callbackURL' },
      { name: 'a callback with a fragment', body: { ...VALID, callbackURL: 'https://deploy.example.test/cb#x' }, field: 'callbackURL' },
      { name: 'a custom-scheme callback', body: { ...VALID, callbackURL: 'myapp://callback' }, field: 'callbackURL' },
      { name: 'a callback of 2049 characters', body: { ...VALID, callbackURL: `https://a.example.test/${'a'.repeat(2030)}` }, field: 'callbackURL' },
      { name: 'one sign-out URL as a string, not a list', body: { ...VALID, signOutRedirectURLs: 'https://deploy.example.test/bye' }, field: 'signOutRedirectURLs' },
      { name: 'a number among the sign-out URLs', body: { ...VALID, signOutRedirectURLs: [5] }, field: 'signOutRedirectURLs' },
      { name: 'a relative sign-out URL', body: { ...VALID, signOutRedirectURLs: ['/bye'] }, field: 'signOutRedirectURLs' },
      { name: 'an http sign-out URL off loopback', body: { ...VALID, signOutRedirectURLs: ['https://deploy.example.test/ok', 'http://deploy.example.test/bye'] }, field: 'signOutRedirectURLs' },
      { name: 'a sign-out URL with a fragment', body: { ...VALID, signOutRedirectURLs: ['https://deploy.example.test/bye#x'] }, field: 'signOutRedirectURLs' },
      { name: 'a sign-out URL of 2049 characters', body: { ...VALID, signOutRedirectURLs: [`https://a.example.test/${'a'.repeat(2026)}`] }, field: 'signOutRedirectURLs' },
      { name: 'eleven sign-out URLs', body: { ...VALID, signOutRedirectURLs: Array.from({ length: 11 }, (_, i) => `https://deploy.example.test/${i}`) }, field: 'signOutRedirectURLs' },
      { name: 'an unknown field', body: { ...VALID, clientSecret: 'hs_mine' }, field: 'clientSecret' },
      { name: 'a JSON array', body: [VALID], field: 'body' },
    ];

    for (const c of cases) {
      it(`answers a create with ${c.name} with 400 naming ${c.field}, creating nothing`, async () => {
        const { group, token } = await owned();
        const res = await api(token, 'POST', `/groups/${group.id}/oauth-apps`, c.body);
        expectApiError(res, 400, 'invalid_request');
        expect(res.body.error_description).to.match(new RegExp(escapeRegExp(c.field)));
        expect(await count('oauth_apps', { group_id: group.id })).to.equal(0);
      });
    }

    for (const c of cases.filter((x) => !['no name', 'no homepage', 'no callback'].includes(x.name))) {
      it(`answers an edit with ${c.name} with 400 naming ${c.field}, changing nothing`, async () => {
        const { group, token } = await owned();
        const app = await created(token, group.id);
        const body = Array.isArray(c.body) ? c.body : { [c.field]: (c.body as Record<string, unknown>)[c.field] };
        const res = await api(token, 'PATCH', `/oauth-apps/${app.clientID}`, body);
        expectApiError(res, 400, 'invalid_request');
        expect(res.body.error_description).to.match(new RegExp(escapeRegExp(c.field)));
        expect(await appRow(app.clientID)).to.include({ name: VALID.name, homepage_url: VALID.homepageURL, description: VALID.description, callback_url: CALLBACK, sign_out_urls: '[]' });
      });
    }

    it('names the position of a bad sign-out URL and what is wrong with it', async () => {
      const { group, token } = await owned();
      const res = await api(token, 'POST', `/groups/${group.id}/oauth-apps`, { ...VALID, signOutRedirectURLs: ['https://deploy.example.test/ok', 'http://deploy.example.test/bye'] });
      expectApiError(res, 400, 'invalid_request');
      expect(res.body.error_description).to.equal('signOutRedirectURLs[1] must use https (http only for localhost, 127.0.0.1 or [::1])');
    });

    it('names every bad field at once, by the API’s field names, in error_description', async () => {
      const { group, token } = await owned();
      const res = await api(token, 'POST', `/groups/${group.id}/oauth-apps`, { name: '', homepageURL: 'deploy.example.test', description: 'fine', callbackURL: 'http://deploy.example.test/cb' });
      expectApiError(res, 400, 'invalid_request');
      expect(res.body.error_description).to.equal(
        'name is required; homepageURL must be an absolute http(s) URL; callbackURL must use https (http only for localhost, 127.0.0.1 or [::1])',
      );
      const edit = await api(token, 'PATCH', `/oauth-apps/${(await created(token, group.id)).clientID}`, { homepageURL: 'nope', signOutRedirectURLs: ['/a', 'https://ok.example.test', '/b'] });
      expectApiError(edit, 400, 'invalid_request');
      expect(edit.body.error_description).to.equal(
        'homepageURL must be an absolute http(s) URL; signOutRedirectURLs[0] must be an absolute URL; signOutRedirectURLs[2] must be an absolute URL',
      );
      expect(await count('oauth_apps', { group_id: group.id })).to.equal(1);
    });

    it('says a field of the wrong type must be of the right one, not that it is required; a list item by its index', async () => {
      const { group, token } = await owned();
      const res = await api(token, 'POST', `/groups/${group.id}/oauth-apps`, { ...VALID, name: 0, deviceFlow: 'yes', signOutRedirectURLs: ['https://ok.example.test', 5] });
      expectApiError(res, 400, 'invalid_request');
      expect(res.body.error_description).to.equal('name must be a string; signOutRedirectURLs[1] must be a string; deviceFlow must be true or false');
      const app = await created(token, group.id);
      const edit = await api(token, 'PATCH', `/oauth-apps/${app.clientID}`, { callbackURL: null, signOutRedirectURLs: 'https://one.example.test' });
      expect(edit.body.error_description).to.equal('callbackURL must be a string; signOutRedirectURLs must be a list of URLs');
    });

    for (const body of ['{"name":', '"Deploy Bot"', 'null', '5']) {
      it(`answers the JSON body ${body} with 400, never a 500`, async () => {
        const { group, token } = await owned();
        const res = await call(idp, `/apis/v2/groups/${group.id}/oauth-apps`, { token, method: 'POST', headers: { 'content-type': 'application/json' }, body });
        expectApiError(res, 400, 'invalid_request');
        expect(await count('oauth_apps', { group_id: group.id })).to.equal(0);
      });
    }

    for (const [method, path] of [['POST', 'groups/{id}/oauth-apps'], ['PATCH', 'oauth-apps/{clientID}'], ['POST', 'oauth-apps/{clientID}/secrets']] as const) {
      it(`refuses a form body on ${method} /${path} with 415`, async () => {
        const { group, token } = await owned();
        const app = await created(token, group.id);
        const url = `/apis/v2/${path.replace('{id}', String(group.id)).replace('{clientID}', app.clientID)}`;
        const res = await call(idp, url, { token, method, headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'name=Form' });
        expectApiError(res, 415, 'unsupported_media_type');
        expect(await count('oauth_apps', { group_id: group.id })).to.equal(1);
        expect((await appRow(app.clientID)).name).to.equal(VALID.name);
      });
    }

    it('refuses a body above 64 KiB with 413', async () => {
      const { group, token } = await owned();
      const res = await api(token, 'POST', `/groups/${group.id}/oauth-apps`, { ...VALID, description: 'd'.repeat(70_000) });
      expectApiError(res, 413, 'payload_too_large');
    });

    it('answers an unknown or absurd client ID with 404', async () => {
      const { token } = await owned();
      for (const id of ['0000000000', 'x'.repeat(300), '%27%20or%201%3D1']) {
        expectApiError(await api(token, 'GET', `/oauth-apps/${id}`), 404, 'not_found');
      }
    });

    it('answers PUT on an application with a JSON 405', async () => {
      const { group, token } = await owned();
      const app = await created(token, group.id);
      expectApiError(await api(token, 'PUT', `/oauth-apps/${app.clientID}`, VALID), 405, 'method_not_allowed');
    });
  });

  describe('who may', () => {
    it('answers no token with 401 and a token without groups:read-write with 403 insufficient_scope', async () => {
      const { owner, group, token } = await owned();
      const app = await created(token, group.id);
      const readOnly = await personalToken(idp.db, owner.id, { scopes: ['groups:read-only'] });
      const requests: Array<[string, string, unknown?]> = [
        ['GET', `/groups/${group.id}/oauth-apps`],
        ['POST', `/groups/${group.id}/oauth-apps`, VALID],
        ['GET', `/oauth-apps/${app.clientID}`],
        ['PATCH', `/oauth-apps/${app.clientID}`, { name: 'x' }],
        ['DELETE', `/oauth-apps/${app.clientID}`],
        ['POST', `/oauth-apps/${app.clientID}/secrets`],
        ['DELETE', `/oauth-apps/${app.clientID}/secrets/${app.secretId}`],
      ];
      for (const [method, path, body] of requests) {
        const none = await call(idp, `/apis/v2${path}`, { method, ...(body ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) } : {}) });
        expectApiError(none, 401, 'unauthorized');
        const res = await api(readOnly, method, path, body);
        expectApiError(res, 403, 'insufficient_scope');
        expect(res.headers.get('www-authenticate')).to.equal(apiChallenge(idp, { error: 'insufficient_scope', scope: 'groups:read-write' }));
      }
      expect(await appRow(app.clientID)).to.include({ name: VALID.name });
      expect(await secretRows(app.clientID)).to.have.length(1);
    });

    for (const role of ['maintainer', 'member'] as const) {
      it(`answers a ${role} with 403 forbidden on every operation and changes nothing`, async () => {
        const { owner, group, token } = await owned();
        const app = await created(token, group.id);
        const { token: theirs } = await join(group, owner, role);
        const audit = await count('audit_events', { group_id: group.id });
        const before = await appRow(app.clientID);
        const requests: Array<[string, string, unknown?]> = [
          ['GET', `/groups/${group.id}/oauth-apps`],
          ['POST', `/groups/${group.id}/oauth-apps`, VALID],
          ['GET', `/oauth-apps/${app.clientID}`],
          ['PATCH', `/oauth-apps/${app.clientID}`, { name: 'Taken over' }],
          ['POST', `/oauth-apps/${app.clientID}/secrets`],
          ['DELETE', `/oauth-apps/${app.clientID}/secrets/${app.secretId}`],
          ['DELETE', `/oauth-apps/${app.clientID}`],
        ];
        for (const [method, path, body] of requests) {
          const res = await api(theirs, method, path, body);
          expectApiError(res, 403, 'forbidden');
          expect(res.text).not.to.match(/hs_[0-9A-Za-z]{36}/);
        }
        expect(await appRow(app.clientID)).to.deep.equal(before);
        expect(await count('oauth_apps', { group_id: group.id })).to.equal(1);
        expect(await secretRows(app.clientID)).to.have.length(1);
        expect(await count('audit_events', { group_id: group.id })).to.equal(audit);
      });
    }

    it('answers an outsider with 404 for the group and its applications, as for ones that do not exist', async () => {
      const { group, token } = await owned();
      const app = await created(token, group.id);
      const outsider = await makeUser(idp.db);
      const theirs = await personalToken(idp.db, outsider.id, { scopes: ['groups:read-write'] });
      const requests: Array<[string, string, unknown?]> = [
        ['GET', `/groups/${group.id}/oauth-apps`],
        ['POST', `/groups/${group.id}/oauth-apps`, VALID],
        ['GET', `/oauth-apps/${app.clientID}`],
        ['PATCH', `/oauth-apps/${app.clientID}`, { name: 'Taken over' }],
        ['POST', `/oauth-apps/${app.clientID}/secrets`],
        ['DELETE', `/oauth-apps/${app.clientID}/secrets/${app.secretId}`],
        ['DELETE', `/oauth-apps/${app.clientID}`],
      ];
      for (const [method, path, body] of requests) {
        const res = await api(theirs, method, path, body);
        expectApiError(res, 404, 'not_found');
        const missing = await api(theirs, method, path.replace(String(group.id), '2147483647').replace(app.clientID, 'f'.repeat(20)), body);
        expect(res.body.error_description, `${method} ${path}`).to.equal(missing.body.error_description);
      }
      expect(await appRow(app.clientID)).to.include({ name: VALID.name });
      expect(await count('oauth_apps', { group_id: group.id })).to.equal(1);
    });

    it('takes the applications away from an owner demoted to maintainer at once', async () => {
      const { owner, group, token } = await owned();
      const app = await created(token, group.id);
      const { user: other } = await join(group, owner, 'owner');
      expect((await api(token, 'GET', `/oauth-apps/${app.clientID}`)).status).to.equal(200);
      await changeRole(idp.db, await groupAccess(idp.db, other.id, group.id), owner.id, 'maintainer');
      expectApiError(await api(token, 'GET', `/oauth-apps/${app.clientID}`), 403, 'forbidden');
      expectApiError(await api(token, 'DELETE', `/oauth-apps/${app.clientID}`), 403, 'forbidden');
      expectApiError(await api(token, 'POST', `/groups/${group.id}/oauth-apps`, VALID), 403, 'forbidden');
      expect(await appRow(app.clientID)).not.to.equal(undefined);
    });

    it('lets an owner of the group who did not create the application manage it', async () => {
      const { owner, group, token } = await owned();
      const app = await created(token, group.id);
      const { token: coOwner } = await join(group, owner, 'owner');
      expect((await api(coOwner, 'PATCH', `/oauth-apps/${app.clientID}`, { name: 'Co-owned' })).status).to.equal(200);
      expect((await api(coOwner, 'DELETE', `/oauth-apps/${app.clientID}`)).status).to.equal(204);
    });

    it('does not let an owner of one group reach another group’s application by its id', async () => {
      const { token } = await owned();
      const stranger = await makeUser(idp.db);
      const theirs = await makeGroup(idp.db, stranger.id);
      const app = await makeApp(idp.db, stranger.id, theirs.id);
      expectApiError(await api(token, 'GET', `/oauth-apps/${app.clientId}`), 404, 'not_found');
      expectApiError(await api(token, 'PATCH', `/oauth-apps/${app.clientId}`, { name: 'Mine now' }), 404, 'not_found');
      expectApiError(await api(token, 'DELETE', `/oauth-apps/${app.clientId}/secrets/${app.secretId}`), 404, 'not_found');
      expectApiError(await api(token, 'DELETE', `/oauth-apps/${app.clientId}`), 404, 'not_found');
      expect(await appRow(app.clientId)).to.include({ name: 'Test App' });
    });
  });

  describe('audit trail', () => {
    it('records every change with the actor and the IP', async () => {
      const { owner, group, token } = await owned();
      const app = await created(token, group.id);
      await api(token, 'PATCH', `/oauth-apps/${app.clientID}`, { description: 'Audited' });
      const second = (await api(token, 'POST', `/oauth-apps/${app.clientID}/secrets`)).body.data;
      await api(token, 'DELETE', `/oauth-apps/${app.clientID}/secrets/${second.id}`);
      await api(token, 'DELETE', `/oauth-apps/${app.clientID}`);
      const events = (await idp.db('audit_events').where({ group_id: group.id }).whereLike('action', 'app.%').orderBy('id')) as Array<{ action: string; actor_id: number; ip: string; target: string; details: string }>;
      expect(events.map((e) => e.action)).to.deep.equal(['app.create', 'app.update', 'app.secret.create', 'app.secret.revoke', 'app.delete']);
      for (const e of events) {
        expect(e).to.include({ actor_id: owner.id, target: app.clientID });
        expect(e.ip).to.match(/127\.0\.0\.1$/);
      }
      // An edit records only what changed, before and after; a revoked secret by its last four characters.
      expect(JSON.parse(events[1]!.details)).to.deep.equal({ changes: { description: { from: VALID.description, to: 'Audited' } } });
      expect(JSON.parse(events[3]!.details)).to.deep.equal({ lastFour: second.lastFour });
      expect(events.map((e) => e.details).join()).not.to.include(app.clientSecret);
    });
  });
});
