import { expect } from 'chai';
import { addMember, removeMember } from '../../src/services/groups.js';
import { generateToken, BASE62 } from '../../src/tokens.js';
import { apiChallenge, call, escapeRegExp, expectApiError, expectInvalidToken } from '../helpers/api.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { signIn, type Browser, type Page } from '../helpers/browser.js';
import { type Client, groupAccess, makeClient, makeGroup, makeUser, personalToken, type TestUser } from '../helpers/factories.js';
import { formAction } from '../helpers/html.js';
import { oauthTokens, refresh, withClockAhead } from '../helpers/oauth.js';

/** The same value with one character of its random part changed, so its checksum no longer matches. */
function flipOneChar(token: string): string {
  const i = 10;
  const c = token[i]!;
  const other = BASE62[(BASE62.indexOf(c) + 1) % BASE62.length]!;
  return token.slice(0, i) + other + token.slice(i + 1);
}

/** Opens `page`, then presses the button of its form posting to an action containing `action`. */
async function pressButton(browser: Browser, page: string, action: string): Promise<Page> {
  const { text } = await browser.get(page).expect(200);
  return browser.submit(formAction(text, action));
}

describeEachProfile('API bearer authentication', (profile) => {
  const idp = useIdp(profile);
  let client: Client;

  before(async () => {
    client = await makeClient(idp.db);
  });

  const newUser = () => makeUser(idp.db);

  describe('without a usable Authorization header', () => {
    it('answers no Authorization header with 401 and a bare Bearer challenge', async () => {
      const res = await call(idp, '/apis/v2/user');
      expectApiError(res, 401, 'unauthorized');
      expect(res.headers.get('www-authenticate')).to.equal(apiChallenge(idp));
    });

    it('answers a Basic Authorization header like no credentials: 401 with a bare Bearer challenge', async () => {
      const res = await call(idp, '/apis/v2/user', { authorization: `Basic ${Buffer.from('user:pass').toString('base64')}` });
      expectApiError(res, 401, 'unauthorized');
      expect(res.headers.get('www-authenticate')).to.equal(apiChallenge(idp));
    });

    it('refuses "Bearer" with an empty token as invalid_token', async () => {
      for (const authorization of ['Bearer', 'Bearer ', 'Bearer    ']) {
        const res = await call(idp, '/apis/v2/user', { authorization });
        expectInvalidToken(idp, res);
      }
    });

    it('refuses a value that is not a token at all as invalid_token', async () => {
      for (const value of ['ho_short', 'not-a-token', `${generateToken('ho_')}x`, 'ho_' + '!'.repeat(36)]) {
        expectInvalidToken(idp, await call(idp, '/apis/v2/user', { token: value }));
      }
    });
  });

  describe('malformed, unknown, expired and revoked tokens', () => {
    let user: TestUser;
    before(async () => {
      user = await newUser();
    });

    it('refuses an ho_ token with a wrong checksum without looking it up', async () => {
      const { accessToken } = await oauthTokens(idp.url, client, user);
      const provider = idp.idp.provider;
      const realFind = provider.AccessToken.find;
      let lookups = 0;
      provider.AccessToken.find = ((...args: Parameters<typeof realFind>) => {
        lookups += 1;
        return realFind.apply(provider.AccessToken, args);
      }) as typeof realFind;
      try {
        expectInvalidToken(idp, await call(idp, '/apis/v2/user', { token: flipOneChar(accessToken) }));
        expect(lookups).to.equal(0);
      } finally {
        provider.AccessToken.find = realFind;
      }
      expect((await call(idp, '/apis/v2/user', { token: accessToken })).status).to.equal(200);
    });

    it('refuses an ha_ token with a wrong checksum', async () => {
      const token = await personalToken(idp.db, user.id);
      expectInvalidToken(idp, await call(idp, '/apis/v2/user', { token: flipOneChar(token) }));
      expect((await call(idp, '/apis/v2/user', { token })).status).to.equal(200);
    });

    it('refuses unknown well-formed ho_ and ha_ tokens', async () => {
      for (const token of [generateToken('ho_'), generateToken('ha_')]) {
        expectInvalidToken(idp, await call(idp, '/apis/v2/user', { token }));
      }
    });

    it('refuses a refresh token or a client secret presented as a bearer token', async () => {
      const { refreshToken } = await oauthTokens(idp.url, client, user);
      expectInvalidToken(idp, await call(idp, '/apis/v2/user', { token: refreshToken }));
      expectInvalidToken(idp, await call(idp, '/apis/v2/user', { token: client.clientSecret }));
    });

    it('refuses an ho_ token 3601 seconds after it was issued', async () => {
      const { accessToken } = await oauthTokens(idp.url, client, user);
      expect((await call(idp, '/apis/v2/user', { token: accessToken })).status).to.equal(200);
      const early = await withClockAhead(3590_000, () => call(idp, '/apis/v2/user', { token: accessToken }));
      expect(early.status, 'still valid 10 s before it expires').to.equal(200);
      const res = await withClockAhead(3601_000, () => call(idp, '/apis/v2/user', { token: accessToken }));
      expectInvalidToken(idp, res);
    });

    it('refuses an ha_ token made for 1 day two days later', async () => {
      const token = await personalToken(idp.db, user.id, { expiresInDays: 1 });
      expect((await call(idp, '/apis/v2/user', { token })).status).to.equal(200);
      const res = await withClockAhead(2 * 86_400_000, () => call(idp, '/apis/v2/user', { token }));
      expectInvalidToken(idp, res);
    });

    it('refuses an ho_ token revoked at the revocation endpoint (RFC 7009)', async () => {
      const { accessToken } = await oauthTokens(idp.url, client, user);
      const discovery = (await (await fetch(`${idp.url}/.well-known/openid-configuration`)).json()) as { revocation_endpoint: string };
      expect(discovery.revocation_endpoint).to.be.a('string');
      const revoked = await fetch(discovery.revocation_endpoint, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${client.clientId}:${client.clientSecret}`).toString('base64')}`,
        },
        body: new URLSearchParams({ token: accessToken, token_type_hint: 'access_token' }).toString(),
      });
      expect(revoked.status, await revoked.text()).to.equal(200);
      expectInvalidToken(idp, await call(idp, '/apis/v2/user', { token: accessToken }));
    });

    it('refuses an ho_ token (and its refresh token) after its user revokes the application in Authorized applications', async () => {
      const owner = await newUser();
      const { accessToken, refreshToken, browser } = await oauthTokens(idp.url, client, owner);
      expect((await call(idp, '/apis/v2/user', { token: accessToken })).status).to.equal(200);
      const res = await pressButton(browser, '/account/settings/applications', `/applications/${client.clientId}/revoke`);
      expect(res.status).to.equal(302);
      expectInvalidToken(idp, await call(idp, '/apis/v2/user', { token: accessToken }));
      const refreshed = await refresh(idp.url, client, refreshToken);
      expect(refreshed.status, JSON.stringify(refreshed.body)).to.equal(400);
      expect(refreshed.body.error).to.equal('invalid_grant');
    });

    it('refuses an ha_ token after its user revokes it in Access tokens', async () => {
      const token = await personalToken(idp.db, user.id, { name: 'to be revoked' });
      const row = (await idp.db('personal_access_tokens').where({ user_id: user.id, name: 'to be revoked' }).first('id')) as { id: number };
      expect((await call(idp, '/apis/v2/user', { token })).status).to.equal(200);
      const browser = await signIn(idp.url, user);
      const res = await pressButton(browser, '/account/settings/tokens', `/tokens/${row.id}/revoke`);
      expect(res.status).to.equal(302);
      expectInvalidToken(idp, await call(idp, '/apis/v2/user', { token }));
    });
  });

  describe('a user removed from a group', () => {
    for (const kind of ['ho_', 'ha_'] as const) {
      it(`no longer sees the group through an ${kind} token: 404 for the group, gone from the list`, async () => {
        const owner = await newUser();
        const member = await newUser();
        const group = await makeGroup(idp.db, owner.id);
        await addMember(idp.db, await groupAccess(idp.db, owner.id, group.id), { user: member.username, role: 'member' });
        const token = kind === 'ho_' ? (await oauthTokens(idp.url, client, member)).accessToken : await personalToken(idp.db, member.id);

        const before = await call(idp, `/apis/v2/groups/${group.id}`, { token });
        expect(before.status, before.text).to.equal(200);
        expect(before.body.data).to.include({ id: group.id, role: 'member' });
        expect((await call(idp, '/apis/v2/groups', { token })).body.data.items.map((g: { id: number }) => g.id)).to.include(group.id);

        await removeMember(idp.db, await groupAccess(idp.db, owner.id, group.id), member.id);

        expectApiError(await call(idp, `/apis/v2/groups/${group.id}`, { token }), 404, 'not_found');
        const list = await call(idp, '/apis/v2/groups', { token });
        expect(list.status).to.equal(200);
        expect(list.body.data.items.map((g: { id: number }) => g.id)).not.to.include(group.id);
        expect(list.body.data.total).to.equal(0);
      });
    }
  });

  describe('scopes', () => {
    it('refuses an ho_ token with only openid on /groups: 403 insufficient_scope naming groups:read-only', async () => {
      const user = await newUser();
      const { accessToken, scope } = await oauthTokens(idp.url, client, user, 'openid');
      expect(scope).to.equal('openid');
      const res = await call(idp, '/apis/v2/groups', { token: accessToken });
      expectApiError(res, 403, 'insufficient_scope');
      expect(res.headers.get('www-authenticate')).to.equal(apiChallenge(idp, { error: 'insufficient_scope', scope: 'groups:read-only' }));
      expectApiError(await call(idp, '/apis/v2/groups/1', { token: accessToken }), 403, 'insufficient_scope');
    });

    it('lets the same openid-only token read /user (any scope), which gives it the id alone', async () => {
      const user = await newUser();
      const { accessToken } = await oauthTokens(idp.url, client, user, 'openid');
      const res = await call(idp, '/apis/v2/user', { token: accessToken });
      expect(res.status, res.text).to.equal(200);
      expect(res.body.data).to.deep.equal({ id: user.id });
    });

    it('lets groups:read-write stand in for groups:read-only', async () => {
      const user = await newUser();
      const token = await personalToken(idp.db, user.id, { scopes: ['groups:read-write'] });
      expect((await call(idp, '/apis/v2/groups', { token })).status).to.equal(200);
    });
  });

  describe('the scheme name', () => {
    for (const scheme of ['Bearer', 'bearer', 'BEARER', 'bEaReR']) {
      it(`accepts "${scheme}"`, async () => {
        const user = await newUser();
        const token = await personalToken(idp.db, user.id);
        const res = await call(idp, '/apis/v2/user', { authorization: `${scheme} ${token}` });
        expect(res.status, res.text).to.equal(200);
        expect(res.body.data.id).to.equal(user.id);
        expect(res.headers.get('x-request-id')).to.be.a('string');
      });
    }
  });

  it('names the realm as the issuer, and the API\'s protected resource metadata, in every challenge', async () => {
    const res = await call(idp, '/apis/v2/groups');
    expect(res.headers.get('www-authenticate')).to.match(new RegExp(`^Bearer realm="${escapeRegExp(idp.url)}", resource_metadata="${escapeRegExp(idp.url)}/\\.well-known/oauth-protected-resource/apis/v2"$`));
  });
});
