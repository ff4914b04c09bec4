import { createHash, randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { generateToken, isWellFormedToken } from '../../src/tokens.js';
import { call, type ApiResponse } from '../helpers/api.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { Browser } from '../helpers/browser.js';
import { makeClient, type Client } from '../helpers/factories.js';
import { authorize, basicAuth, discovery, tokenRequest } from '../helpers/oauth.js';

/** A PKCE code verifier and its S256 challenge. */
function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** RFC 7662 introspection, authenticating as `client` with HTTP Basic. */
async function introspect(base: string, client: Client, token: string): Promise<ApiResponse> {
  return call({ url: base }, (await discovery(base)).introspection_endpoint!, { method: 'POST', authorization: basicAuth(client.clientId, client.clientSecret), form: { token } });
}

/** RFC 7009 revocation, authenticating as `client` with HTTP Basic; the status. */
async function revoke(base: string, client: Client, token: string): Promise<number> {
  return (await call({ url: base }, (await discovery(base)).revocation_endpoint!, { method: 'POST', authorization: basicAuth(client.clientId, client.clientSecret), form: { token } })).status;
}

/** The token endpoint's parameters, client authentication and every error it answers. */
describeEachProfile('POST /login/oauth/access_token', (profile) => {
  const server = useIdp(profile);
  let fx: Client;
  let other: Client;
  /** Signed in as fx.user, so each further code is one authorize request (plus consent for a new app). */
  let browser: Browser;

  before(async () => {
    fx = await makeClient(server.db);
    other = await makeClient(server.db, { user: fx.user, name: 'Other App' });
    browser = new Browser(server.url);
  });

  async function codeFor(client: Client = fx, extra?: Record<string, string>): Promise<string> {
    const params = (await authorize(browser, { ...client, extra }, fx.user)).searchParams;
    const code = params.get('code');
    expect(code, params.toString()).to.be.a('string');
    return code!;
  }

  /** The parameters of a valid authorization_code exchange for `code`. */
  function exchangeParams(code: string, client: Client = fx) {
    return { client_id: client.clientId, client_secret: client.clientSecret, code, redirect_uri: client.redirectUri };
  }

  function expectOk(res: ApiResponse): void {
    expect(res.status, res.text).to.equal(200);
    expect(isWellFormedToken(String(res.body.access_token), 'ho_'), res.text).to.equal(true);
  }

  function expectError(res: ApiResponse, status: number, error: string): void {
    expect(res.status, res.text).to.equal(status);
    expect(res.body.error, res.text).to.equal(error);
    expect(res.body.error_description).to.be.a('string');
  }

  describe('where the parameters come from', () => {
    it('accepts every parameter in the query string with an empty body (the query-string style)', async () => {
      expectOk(await tokenRequest(server.url, { query: exchangeParams(await codeFor()) }));
    });

    it('accepts every parameter in the query string with an empty form body', async () => {
      expectOk(await tokenRequest(server.url, { query: exchangeParams(await codeFor()), form: '' }));
    });

    it('accepts every parameter in an application/x-www-form-urlencoded body', async () => {
      expectOk(await tokenRequest(server.url, { form: { grant_type: 'authorization_code', ...exchangeParams(await codeFor()) } }));
    });

    it('accepts parameters split between the query string and the body', async () => {
      const { client_id, client_secret, ...rest } = exchangeParams(await codeFor());
      expectOk(await tokenRequest(server.url, { query: { client_id, client_secret }, form: rest }));
    });

    it('accepts a parameter given in both the query string and the body with the same value', async () => {
      const params = exchangeParams(await codeFor());
      expectOk(await tokenRequest(server.url, { query: params, form: { code: params.code, client_id: params.client_id } }));
    });

    it('rejects a parameter given in the query string and the body with different values as invalid_request', async () => {
      const params = exchangeParams(await codeFor());
      const res = await tokenRequest(server.url, { query: params, form: { redirect_uri: 'http://127.0.0.1:9999/other' } });
      expectError(res, 400, 'invalid_request');
      expect(res.body.error_description).to.include('redirect_uri');
    });

    it('rejects a parameter repeated in the query string as invalid_request', async () => {
      const params = exchangeParams(await codeFor());
      const query = `${new URLSearchParams(params)}&code=${encodeURIComponent(params.code)}x`;
      const res = await tokenRequest(server.url, { query });
      expectError(res, 400, 'invalid_request');
      expect(res.body.error_description).to.include('code');
    });

    it('rejects a parameter repeated in the body as invalid_request', async () => {
      const params = exchangeParams(await codeFor());
      const form = `${new URLSearchParams(params)}&redirect_uri=${encodeURIComponent(params.redirect_uri)}`;
      expectError(await tokenRequest(server.url, { form }), 400, 'invalid_request');
    });

    it('rejects a JSON body as invalid_request', async () => {
      const res = await tokenRequest(server.url, {
        body: JSON.stringify({ grant_type: 'authorization_code', ...exchangeParams(await codeFor()) }),
        headers: { 'content-type': 'application/json' },
      });
      expectError(res, 400, 'invalid_request');
    });
  });

  describe('grant_type', () => {
    it('treats an absent grant_type as authorization_code', async () => {
      const params = exchangeParams(await codeFor());
      expect(params).not.to.have.property('grant_type');
      expectOk(await tokenRequest(server.url, { form: params }));
    });

    it('rejects grant_type=password as unsupported_grant_type', async () => {
      const res = await tokenRequest(server.url, {
        form: { grant_type: 'password', username: fx.user.username, password: fx.user.password, client_id: fx.clientId, client_secret: fx.clientSecret },
      });
      expectError(res, 400, 'unsupported_grant_type');
    });

    it('rejects grant_type=client_credentials as unauthorized_client for an application that does not act as itself', async () => {
      const res = await tokenRequest(server.url, { form: { grant_type: 'client_credentials', client_id: fx.clientId, client_secret: fx.clientSecret } });
      expectError(res, 400, 'unauthorized_client');
      expect(res.body.error_description).to.include('Allow the application to act as itself');
    });
  });

  describe('client authentication', () => {
    it('accepts HTTP Basic (client_secret_basic)', async () => {
      const { client_id: _id, client_secret: _secret, ...rest } = exchangeParams(await codeFor());
      expectOk(await tokenRequest(server.url, { form: rest, headers: { authorization: basicAuth(fx.clientId, fx.clientSecret) } }));
    });

    it('accepts HTTP Basic with the other parameters in the query string', async () => {
      const { client_id: _id, client_secret: _secret, ...rest } = exchangeParams(await codeFor());
      expectOk(await tokenRequest(server.url, { query: rest, headers: { authorization: basicAuth(fx.clientId, fx.clientSecret) } }));
    });

    it('rejects a Basic header that is not base64 as invalid_request', async () => {
      const { client_id: _id, client_secret: _secret, ...rest } = exchangeParams(await codeFor());
      const res = await tokenRequest(server.url, { form: rest, headers: { authorization: 'Basic !!not*base64!!' } });
      expectError(res, 400, 'invalid_request');
    });

    it('rejects a Basic header without a colon as invalid_request', async () => {
      const { client_id: _id, client_secret: _secret, ...rest } = exchangeParams(await codeFor());
      const res = await tokenRequest(server.url, {
        form: rest,
        headers: { authorization: `Basic ${Buffer.from(`${fx.clientId}${fx.clientSecret}`).toString('base64')}` },
      });
      expectError(res, 400, 'invalid_request');
    });

    it('rejects HTTP Basic together with a client_secret parameter as invalid_request', async () => {
      const res = await tokenRequest(server.url, {
        form: exchangeParams(await codeFor()),
        headers: { authorization: basicAuth(fx.clientId, fx.clientSecret) },
      });
      expectError(res, 400, 'invalid_request');
    });

    it('rejects an unknown client with 401 invalid_client', async () => {
      const params = { ...exchangeParams(await codeFor()), client_id: 'no-such-client' };
      expectError(await tokenRequest(server.url, { query: params }), 401, 'invalid_client');
    });

    it('rejects a well-formed but wrong hs_ secret with 401 invalid_client', async () => {
      const params = { ...exchangeParams(await codeFor()), client_secret: generateToken('hs_') };
      expectError(await tokenRequest(server.url, { query: params }), 401, 'invalid_client');
    });

    it('rejects a garbage secret with 401 invalid_client', async () => {
      const params = { ...exchangeParams(await codeFor()), client_secret: 'garbage' };
      expectError(await tokenRequest(server.url, { query: params }), 401, 'invalid_client');
    });

    it('rejects another application\'s secret with 401 invalid_client', async () => {
      const params = { ...exchangeParams(await codeFor()), client_secret: other.clientSecret };
      expectError(await tokenRequest(server.url, { query: params }), 401, 'invalid_client');
    });

    it('rejects a wrong secret over HTTP Basic with 401 invalid_client', async () => {
      const { client_id: _id, client_secret: _secret, ...rest } = exchangeParams(await codeFor());
      const res = await tokenRequest(server.url, { form: rest, headers: { authorization: basicAuth(fx.clientId, generateToken('hs_')) } });
      expectError(res, 401, 'invalid_client');
    });

    it('rejects a request without client authentication as invalid_request', async () => {
      const { client_id: _id, client_secret: _secret, ...rest } = exchangeParams(await codeFor());
      expectError(await tokenRequest(server.url, { form: rest }), 400, 'invalid_request');
    });
  });

  describe('the authorization code', () => {
    it('rejects a code presented a second time with invalid_grant', async () => {
      const client = await makeClient(server.db, { user: fx.user, name: 'Other App' });
      const params = exchangeParams(await codeFor(client), client);
      expectOk(await tokenRequest(server.url, { query: params }));
      expectError(await tokenRequest(server.url, { query: params }), 400, 'invalid_grant');
    });

    it('revokes the access token of the first exchange when a code is presented again', async () => {
      const client = await makeClient(server.db, { user: fx.user, name: 'Other App' });
      const params = exchangeParams(await codeFor(client), client);
      const first = await tokenRequest(server.url, { query: params });
      const accessToken = String(first.body.access_token);
      expect((await introspect(server.url, client, accessToken)).body.active).to.equal(true);
      await tokenRequest(server.url, { query: params });
      const res = await introspect(server.url, client, accessToken);
      expect(res.status).to.equal(200);
      expect(res.body).to.deep.equal({ active: false });
    });

    it('revokes the refresh token of the first exchange when a code is presented again', async () => {
      const client = await makeClient(server.db, { user: fx.user, name: 'Other App' });
      const params = exchangeParams(await codeFor(client), client);
      const first = await tokenRequest(server.url, { query: params });
      await tokenRequest(server.url, { query: params });
      const res = await tokenRequest(server.url, {
        form: { grant_type: 'refresh_token', refresh_token: String(first.body.refresh_token), client_id: client.clientId, client_secret: client.clientSecret },
      });
      expectError(res, 400, 'invalid_grant');
    });

    it('rejects a code issued to another client with invalid_grant', async () => {
      const code = await codeFor(fx);
      expectError(await tokenRequest(server.url, { query: exchangeParams(code, other) }), 400, 'invalid_grant');
    });

    it('rejects a redirect_uri that differs from the authorize request\'s with invalid_grant', async () => {
      const params = { ...exchangeParams(await codeFor()), redirect_uri: 'http://127.0.0.1:9999/callback/' };
      expectError(await tokenRequest(server.url, { query: params }), 400, 'invalid_grant');
    });

    it('rejects an exchange without redirect_uri as invalid_request', async () => {
      const { redirect_uri: _uri, ...params } = exchangeParams(await codeFor());
      expectError(await tokenRequest(server.url, { query: params }), 400, 'invalid_request');
    });

    it('rejects an unknown code with invalid_grant', async () => {
      const params = exchangeParams('unknown-code-0123456789abcdefghijklmnopqrstuvwxyz');
      expectError(await tokenRequest(server.url, { query: params }), 400, 'invalid_grant');
    });

    it('rejects a missing code as invalid_request', async () => {
      const { code: _code, ...params } = exchangeParams('x');
      expectError(await tokenRequest(server.url, { query: params }), 400, 'invalid_request');
    });
  });

  describe('PKCE', () => {
    it('exchanges a code with the right code_verifier', async () => {
      const { verifier, challenge } = pkcePair();
      const code = await codeFor(fx, { code_challenge: challenge, code_challenge_method: 'S256' });
      expectOk(await tokenRequest(server.url, { query: { ...exchangeParams(code), code_verifier: verifier } }));
    });

    it('rejects a wrong code_verifier with invalid_grant', async () => {
      const { challenge } = pkcePair();
      const code = await codeFor(fx, { code_challenge: challenge, code_challenge_method: 'S256' });
      const res = await tokenRequest(server.url, { query: { ...exchangeParams(code), code_verifier: pkcePair().verifier } });
      expectError(res, 400, 'invalid_grant');
    });

    it('rejects a missing code_verifier with invalid_grant', async () => {
      const { challenge } = pkcePair();
      const code = await codeFor(fx, { code_challenge: challenge, code_challenge_method: 'S256' });
      expectError(await tokenRequest(server.url, { query: exchangeParams(code) }), 400, 'invalid_grant');
    });

    it('keeps the code usable after a wrong code_verifier is rejected', async () => {
      const { verifier, challenge } = pkcePair();
      const code = await codeFor(fx, { code_challenge: challenge, code_challenge_method: 'S256' });
      await tokenRequest(server.url, { query: { ...exchangeParams(code), code_verifier: pkcePair().verifier } });
      expectOk(await tokenRequest(server.url, { query: { ...exchangeParams(code), code_verifier: verifier } }));
    });
  });

  describe('refresh tokens', () => {
    /** A first exchange for a client of its own, so a revoked grant touches no other test. */
    async function firstTokens(): Promise<{ client: Client; refreshToken: string; accessToken: string }> {
      const client = await makeClient(server.db, { user: fx.user, name: 'Other App' });
      const res = await tokenRequest(server.url, { query: exchangeParams(await codeFor(client), client) });
      expectOk(res);
      return { client, refreshToken: String(res.body.refresh_token), accessToken: String(res.body.access_token) };
    }

    function refresh(client: Client, refreshToken: string): Promise<ApiResponse> {
      return tokenRequest(server.url, {
        query: { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: client.clientId, client_secret: client.clientSecret },
      });
    }

    it('returns a new hr_ refresh token and a new ho_ access token in the contract\'s shape', async () => {
      const first = await firstTokens();
      const res = await refresh(first.client, first.refreshToken);
      expect(res.status, res.text).to.equal(200);
      expect(res.headers.get('cache-control')).to.include('no-store');
      expect(res.body).to.include({ token_type: 'bearer', scope: 'groups:read-only', expire_in: '3600', expires_in: 3600 });
      expect(isWellFormedToken(String(res.body.access_token), 'ho_')).to.equal(true);
      expect(isWellFormedToken(String(res.body.refresh_token), 'hr_')).to.equal(true);
      expect(res.body.access_token).not.to.equal(first.accessToken);
      expect(res.body.refresh_token).not.to.equal(first.refreshToken);
    });

    it('rejects a rotated-out refresh token with invalid_grant', async () => {
      const first = await firstTokens();
      await refresh(first.client, first.refreshToken);
      expectError(await refresh(first.client, first.refreshToken), 400, 'invalid_grant');
    });

    it('revokes the newest refresh token once a rotated-out one is presented', async () => {
      const first = await firstTokens();
      const second = await refresh(first.client, first.refreshToken);
      await refresh(first.client, first.refreshToken);
      expectError(await refresh(first.client, String(second.body.refresh_token)), 400, 'invalid_grant');
    });

    it('rejects another client\'s refresh token with invalid_grant', async () => {
      const first = await firstTokens();
      expectError(await refresh(other, first.refreshToken), 400, 'invalid_grant');
    });

    it('rejects an unknown refresh token with invalid_grant', async () => {
      expectError(await refresh(fx, generateToken('hr_')), 400, 'invalid_grant');
    });
  });

  describe('the shape of error responses', () => {
    const cases: Record<string, (code: string) => Parameters<typeof tokenRequest>[1]> = {
      'invalid_client (unknown client)': (code) => ({ query: { ...exchangeParams(code), client_id: 'nope' } }),
      'invalid_client (wrong secret)': (code) => ({ query: { ...exchangeParams(code), client_secret: 'wrong' } }),
      'invalid_grant': (code) => ({ query: { ...exchangeParams(code), redirect_uri: 'http://127.0.0.1:9999/x' } }),
      'unsupported_grant_type': (code) => ({ query: { ...exchangeParams(code), grant_type: 'password' } }),
      'invalid_request (JSON body)': (code) => ({ body: JSON.stringify(exchangeParams(code)), headers: { 'content-type': 'application/json' } }),
      'invalid_request (duplicate)': (code) => ({ query: `${new URLSearchParams(exchangeParams(code))}&grant_type=a&grant_type=b` }),
      'invalid_request (malformed Basic)': (code) => ({ query: { code, redirect_uri: fx.redirectUri }, headers: { authorization: 'Basic %%%' } }),
    };
    for (const [what, call] of Object.entries(cases)) {
      it(`answers ${what} as JSON with Cache-Control: no-store and no stack trace`, async () => {
        const res = await tokenRequest(server.url, call(await codeFor()));
        expect(res.status).to.be.within(400, 401);
        expect(res.headers.get('content-type')).to.match(/^application\/json/);
        expect(res.headers.get('cache-control')).to.include('no-store');
        expect(Object.keys(res.body).sort()).to.deep.equal(['error', 'error_description']);
        expect(res.text).not.to.match(/<html|\bat .+:\d+:\d+|node_modules|Error:/i);
      });
    }

    it('answers an error as JSON even when the client prefers HTML', async () => {
      const res = await tokenRequest(server.url, {
        query: { ...exchangeParams(await codeFor()), client_secret: 'wrong' },
        headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' },
      });
      expect(res.status).to.equal(401);
      expect(res.headers.get('content-type')).to.match(/^application\/json/);
      expect(res.body.error).to.equal('invalid_client');
    });

    it('answers a success as JSON with Cache-Control: no-store', async () => {
      const res = await tokenRequest(server.url, { query: exchangeParams(await codeFor()) });
      expect(res.status).to.equal(200);
      expect(res.headers.get('content-type')).to.match(/^application\/json/);
      expect(res.headers.get('cache-control')).to.include('no-store');
    });
  });

  describe('revocation and introspection', () => {
    it('reports the client\'s own fresh access token as active', async () => {
      const res = await tokenRequest(server.url, { query: exchangeParams(await codeFor()) });
      const found = await introspect(server.url, fx, String(res.body.access_token));
      expect(found.status).to.equal(200);
      expect(found.body).to.include({ active: true, client_id: fx.clientId, scope: 'groups:read-only', sub: String(fx.user.id) });
    });

    it('reports an access token as inactive once it is revoked', async () => {
      const res = await tokenRequest(server.url, { query: exchangeParams(await codeFor()) });
      const accessToken = String(res.body.access_token);
      expect(await revoke(server.url, fx, accessToken)).to.equal(200);
      const found = await introspect(server.url, fx, accessToken);
      expect(found.status).to.equal(200);
      expect(found.body).to.deep.equal({ active: false });
    });

    it('refuses the access token at the userinfo endpoint once it is revoked', async () => {
      const code = (await authorize(browser, { ...fx, scope: 'openid' }, fx.user)).searchParams.get('code')!;
      const res = await tokenRequest(server.url, { query: exchangeParams(code) });
      const accessToken = String(res.body.access_token);
      await revoke(server.url, fx, accessToken);
      const info = await fetch(`${server.url}/login/oauth/userinfo`, { headers: { authorization: `Bearer ${accessToken}` } });
      expect(info.status).to.equal(401);
    });

    it('reports another client\'s access token as inactive to a client', async () => {
      const res = await tokenRequest(server.url, { query: exchangeParams(await codeFor()) });
      const found = await introspect(server.url, other, String(res.body.access_token));
      expect(found.status).to.equal(200);
      expect(found.body).to.deep.equal({ active: false });
    });

    it('reports another client\'s refresh token as inactive to a client', async () => {
      const res = await tokenRequest(server.url, { query: exchangeParams(await codeFor()) });
      const found = await introspect(server.url, other, String(res.body.refresh_token));
      expect(found.body).to.deep.equal({ active: false });
    });

    it('leaves a token active when another client tries to revoke it', async () => {
      const res = await tokenRequest(server.url, { query: exchangeParams(await codeFor()) });
      const accessToken = String(res.body.access_token);
      await revoke(server.url, other, accessToken);
      expect((await introspect(server.url, fx, accessToken)).body.active).to.equal(true);
    });
  });

  describe('storage holds no secret in clear', () => {
    let secrets: Record<string, string>;

    before(async () => {
      const code = await codeFor();
      const res = await tokenRequest(server.url, { query: exchangeParams(code) });
      expectOk(res);
      const refreshed = await tokenRequest(server.url, {
        query: { grant_type: 'refresh_token', refresh_token: String(res.body.refresh_token), client_id: fx.clientId, client_secret: fx.clientSecret },
      });
      expect(refreshed.status, refreshed.text).to.equal(200);
      secrets = {
        code,
        'access token': String(res.body.access_token),
        'refresh token': String(res.body.refresh_token),
        'refreshed access token': String(refreshed.body.access_token),
        'rotated refresh token': String(refreshed.body.refresh_token),
        'client secret': fx.clientSecret,
      };
    });

    /** Every row of every table, as text. */
    async function sqlDump(): Promise<string> {
      const { db } = server.idp;
      const tables: string[] = server.database.kind === 'sqlite'
        ? (await db('sqlite_master').where({ type: 'table' }).pluck('name'))
        : (await db('information_schema.tables').where({ table_schema: 'public' }).pluck('table_name'));
      const parts: string[] = [];
      for (const table of tables) parts.push(JSON.stringify(await db(table).select('*')));
      return parts.join('\n');
    }

    /** Every key of this test server's Redis, with its value whatever its type. */
    async function redisDump(): Promise<string> {
      const redis = server.idp.redis!;
      const keys = await redis.keys('idp-test:*');
      const parts: string[] = [];
      for (const key of keys) {
        const type = await redis.type(key);
        let value: unknown = `<${type}>`;
        if (type === 'hash') value = await redis.hgetall(key);
        else if (type === 'string') value = await redis.get(key);
        else if (type === 'zset') value = await redis.zrange(key, '0', '-1');
        else if (type === 'set') value = await redis.smembers(key);
        else if (type === 'list') value = await redis.lrange(key, '0', '-1');
        parts.push(`${key} ${JSON.stringify(value)}`);
      }
      return parts.join('\n');
    }

    it('keeps the oidc_models rows keyed and filled without any token or code', async () => {
      const rows = await server.db('oidc_models').select('id', 'payload');
      if (!server.idp.redis) expect(rows.length).to.be.above(0);
      const dump = JSON.stringify(rows);
      for (const [what, value] of Object.entries(secrets)) expect(dump, what).not.to.include(value);
    });

    it('keeps no token, code or client secret anywhere in the SQL database', async () => {
      const dump = await sqlDump();
      for (const [what, value] of Object.entries(secrets)) expect(dump, what).not.to.include(value);
    });

    if (profile === 'postgres+redis') {
      it('keeps no token, code or client secret in any Redis key or value', async () => {
        const dump = await redisDump();
        expect(dump).to.include('AccessToken');
        for (const [what, value] of Object.entries(secrets)) expect(dump, what).not.to.include(value);
      });
    }
  });
});
