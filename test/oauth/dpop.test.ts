import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose';
import * as client from 'openid-client';
import { apiChallenge, call, escapeRegExp, expectApiError, type ApiResponse } from '../helpers/api.js';
import { describeEachProfile, startIdp, useIdp, type RunningIdp } from '../helpers/app.js';
import { Browser } from '../helpers/browser.js';
import { makeApp, makeClient, makeGroup, makeUser, personalToken, type Client, type TestUser } from '../helpers/factories.js';
import { authorize, basicAuth, discovery, tokenRequest } from '../helpers/oauth.js';
import { scanKeys } from '../helpers/redis-topologies.js';
import { claimDpopProof, pruneDpopProofs } from '../../src/db/dpop-proofs.js';

const REDIRECT_URI = 'http://127.0.0.1:9999/native/callback';
const ALGS = 'ES256 Ed25519 EdDSA';

type Keys = { privateKey: CryptoKey; publicKey: CryptoKey };

/** A DPoP proof signed by `keys`, its claims and header as given (a valid proof unless changed). */
async function dpopProof(keys: Keys, claims: { htm: string; htu: string; token?: string; jti?: string; iat?: number; [k: string]: unknown }, header: Record<string, unknown> = {}): Promise<string> {
  const { htm, htu, token, jti = randomUUID(), iat = Math.floor(Date.now() / 1000), ...extra } = claims;
  const ath = token === undefined ? undefined : createHash('sha256').update(token).digest('base64url');
  return new SignJWT({ htm, htu, ...(ath ? { ath } : {}), ...extra })
    .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: await exportJWK(keys.publicKey), ...header })
    .setJti(jti)
    .setIssuedAt(iat)
    .sign(keys.privateKey);
}

/** A GET of the API with `Authorization: DPoP <token>` and `proof` (none when undefined). */
function dpopCall(server: { url: string }, path: string, token: string, proof?: string): Promise<ApiResponse> {
  return call(server, path, { authorization: `DPoP ${token}`, headers: proof === undefined ? {} : { dpop: proof } });
}

function expectDpopChallenge(server: { url: string }, res: ApiResponse, error: string, status = 401): void {
  expectApiError(res, status, error);
  const challenge = res.headers.get('www-authenticate') ?? '';
  expect(challenge).to.match(new RegExp(`^${escapeRegExp(apiChallenge(server, {}, 'DPoP'))}, error="${error}", error_description="[^"]+", algs="${ALGS}"$`));
}

/**
 * DPoP (RFC 9449): a client that proves possession of a key at the token endpoint gets tokens
 * bound to it, and the API takes such a token only with a fresh proof of that key for the request.
 */
describeEachProfile('DPoP-bound tokens', (profile) => {
  const idp = useIdp(profile);
  let app: Client;
  let keys: Keys;
  let config: client.Configuration;

  before(async () => {
    app = await makeClient(idp.db);
    // openid-client's own key pair (its private key not extractable), as the example in docs/oauth.md makes it.
    keys = await client.randomDPoPKeyPair('ES256');
    // Plain http only because the test server is on loopback.
    config = await client.discovery(new URL(idp.url), app.clientId, app.clientSecret, undefined, { execute: [client.allowInsecureRequests] });
  });

  /** The code flow with openid-client and a DPoP handle on `keys`. */
  async function boundTokens(person: TestUser = app.user, scope = 'openid groups:read-only') {
    const state = client.randomState();
    const callback = await authorize(new Browser(idp.url), { clientId: app.clientId, redirectUri: app.redirectUri, state, scope }, person);
    return client.authorizationCodeGrant(config, callback, { expectedState: state }, undefined, { DPoP: client.getDPoPHandle(config, keys) });
  }

  it('is advertised in discovery with the algorithms a proof may use', async () => {
    const metadata = await discovery(idp.url);
    expect(metadata.dpop_signing_alg_values_supported).to.deep.equal(ALGS.split(' '));
  });

  it('runs the code flow, an API call and a refresh with openid-client\'s DPoP option', async () => {
    const DPoP = client.getDPoPHandle(config, keys);
    const tokens = await boundTokens();
    expect(tokens.token_type).to.equal('dpop');
    expect(tokens.access_token).to.match(/^ho_/);
    expect(tokens.refresh_token).to.match(/^hr_/);

    const user = await client.fetchProtectedResource(config, tokens.access_token, new URL(`${idp.url}/apis/v2/user`), 'GET', undefined, undefined, { DPoP });
    expect(user.status, await user.clone().text()).to.equal(200);
    expect(((await user.json()) as { data: { id: number } }).data.id).to.equal(app.user.id);

    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!, undefined, { DPoP });
    expect(refreshed.token_type).to.equal('dpop');
    expect(refreshed.access_token).to.match(/^ho_/).and.not.equal(tokens.access_token);
    const again = await client.fetchProtectedResource(config, refreshed.access_token, new URL(`${idp.url}/apis/v2/groups`), 'GET', undefined, undefined, { DPoP });
    expect(again.status).to.equal(200);
  });

  it('binds the token to the key: introspection shows cnf.jkt, the key\'s thumbprint', async () => {
    const tokens = await boundTokens();
    const introspected = await call(idp, '/login/oauth/introspect', { method: 'POST', form: { token: tokens.access_token }, headers: { authorization: basicAuth(app.clientId, app.clientSecret) } });
    expect(introspected.status, introspected.text).to.equal(200);
    expect(introspected.body.active).to.equal(true);
    expect(introspected.body.token_type).to.equal('DPoP');
    expect(introspected.body.cnf).to.deep.equal({ jkt: await calculateJwkThumbprint(await exportJWK(keys.publicKey)) });
  });

  it('refuses a bound token sent as Bearer, with a DPoP challenge', async () => {
    const tokens = await boundTokens();
    const res = await call(idp, '/apis/v2/user', { token: tokens.access_token });
    expectDpopChallenge(idp, res, 'invalid_token');
    expect(res.body.error_description).to.match(/bound to a DPoP key/);
  });

  it('accepts a hand-made proof once, and refuses it replayed', async () => {
    const tokens = await boundTokens();
    const proof = await dpopProof(keys, { htm: 'GET', htu: `${idp.url}/apis/v2/user`, token: tokens.access_token });
    const first = await dpopCall(idp, '/apis/v2/user', tokens.access_token, proof);
    expect(first.status, first.text).to.equal(200);
    const replayed = await dpopCall(idp, '/apis/v2/user', tokens.access_token, proof);
    expectDpopChallenge(idp, replayed, 'invalid_dpop_proof');
    expect(replayed.body.error_description).to.match(/already used/);
  });

  it('remembers an accepted proof only while its iat is in the window', async () => {
    const tokens = await boundTokens();
    const proof = await dpopProof(keys, { htm: 'GET', htu: `${idp.url}/apis/v2/user`, token: tokens.access_token });
    expect((await dpopCall(idp, '/apis/v2/user', tokens.access_token, proof)).status).to.equal(200);
    const redis = idp.idp.redis;
    if (redis) {
      const remembered = await scanKeys(redis, '*dpop:*');
      expect(remembered.length).to.be.above(0);
      for (const key of remembered) expect(await redis.ttl(key)).to.be.within(1, 301);
    }
    // The SQL store (the one in use without Redis): a current row refuses, an expired one does not, and pruning removes it.
    const digest = randomBytes(16).toString('hex');
    expect(await claimDpopProof(idp.db, digest, Date.now() + 60_000)).to.equal(true);
    expect(await claimDpopProof(idp.db, digest, Date.now() + 60_000)).to.equal(false);
    const stale = randomBytes(16).toString('hex');
    expect(await claimDpopProof(idp.db, stale, Date.now() - 1)).to.equal(true);
    expect(await claimDpopProof(idp.db, stale, Date.now() - 1)).to.equal(true);
    expect(await pruneDpopProofs(idp.db)).to.be.at.least(1);
    expect(await idp.db('dpop_proofs').where({ digest: stale }).first()).to.equal(undefined);
    expect(await idp.db('dpop_proofs').where({ digest }).first()).to.not.equal(undefined);
  });

  it('refuses at the token endpoint a proof it has seen, on either store', async () => {
    const callback = await authorize(new Browser(idp.url), { clientId: app.clientId, redirectUri: app.redirectUri, state: 'r', scope: 'openid' }, app.user);
    const proof = await dpopProof(keys, { htm: 'POST', htu: `${idp.url}/login/oauth/access_token` });
    const auth = { authorization: basicAuth(app.clientId, app.clientSecret), dpop: proof };
    const issued = await tokenRequest(idp.url, { form: { grant_type: 'authorization_code', code: callback.searchParams.get('code')!, redirect_uri: app.redirectUri }, headers: auth });
    expect(issued.status, issued.text).to.equal(200);
    expect(issued.body.token_type).to.equal('DPoP');
    const again = await tokenRequest(idp.url, { form: { grant_type: 'refresh_token', refresh_token: issued.body.refresh_token }, headers: auth });
    expect(again.status, again.text).to.equal(400);
    // The library says only `invalid_grant` (the detail, "DPoP proof JWT Replay detected", is logged).
    expect(again.body).to.include({ error: 'invalid_grant' });
    const fresh = { ...auth, dpop: await dpopProof(keys, { htm: 'POST', htu: `${idp.url}/login/oauth/access_token` }) };
    const refreshed = await tokenRequest(idp.url, { form: { grant_type: 'refresh_token', refresh_token: issued.body.refresh_token }, headers: fresh });
    expect(refreshed.status, refreshed.text).to.equal(200);
    expect(refreshed.body.token_type).to.equal('DPoP');
  });

  it('ignores the query string in htu, as the RFC says', async () => {
    const tokens = await boundTokens();
    const proof = await dpopProof(keys, { htm: 'GET', htu: `${idp.url}/apis/v2/groups?page=1#x`, token: tokens.access_token });
    const res = await call(idp, '/apis/v2/groups?page=1', { authorization: `DPoP ${tokens.access_token}`, headers: { dpop: proof } });
    expect(res.status, res.text).to.equal(200);
  });

  it('refuses a proof for another method, URL or token, by another key, stale, or missing', async () => {
    const tokens = await boundTokens();
    const other = await boundTokens();
    const token = tokens.access_token;
    const htu = `${idp.url}/apis/v2/user`;
    const now = Math.floor(Date.now() / 1000);
    const cases: [string, Promise<string> | string | undefined, RegExp][] = [
      ['htm POST', dpopProof(keys, { htm: 'POST', htu, token }), /htm/],
      ['htu of another path', dpopProof(keys, { htm: 'GET', htu: `${idp.url}/apis/v2/groups`, token }), /htu/],
      ['htu of another host', dpopProof(keys, { htm: 'GET', htu: 'http://attacker.example/apis/v2/user', token }), /htu/],
      ['htu not a URL', dpopProof(keys, { htm: 'GET', htu: 'not a url', token }), /htu/],
      ['ath of another token', dpopProof(keys, { htm: 'GET', htu, token: other.access_token }), /ath/],
      ['no ath', dpopProof(keys, { htm: 'GET', htu }), /ath/],
      ['another key', generateKeyPair('ES256').then((k) => dpopProof(k, { htm: 'GET', htu, token })), /not signed by the key/],
      ['iat ten minutes ago', dpopProof(keys, { htm: 'GET', htu, token, iat: now - 600 }), /iat/],
      ['iat ten minutes ahead', dpopProof(keys, { htm: 'GET', htu, token, iat: now + 600 }), /iat/],
      ['a nonce', dpopProof(keys, { htm: 'GET', htu, token, nonce: 'abc' }), /nonce/],
      ['no DPoP header', undefined, /send a DPoP proof/],
      ['an empty DPoP header', '', /send a DPoP proof/],
    ];
    for (const [name, made, reason] of cases) {
      const res = await dpopCall(idp, '/apis/v2/user', token, await made);
      expectDpopChallenge(idp, res, 'invalid_dpop_proof');
      expect(res.body.error_description, name).to.match(reason);
    }
    // None of them used the token up: a good proof still works.
    expect((await dpopCall(idp, '/apis/v2/user', token, await dpopProof(keys, { htm: 'GET', htu, token }))).status).to.equal(200);
  });

  it('answers malformed proofs with 401 invalid_dpop_proof, never a 500', async () => {
    const tokens = await boundTokens();
    const token = tokens.access_token;
    const htu = `${idp.url}/apis/v2/user`;
    const jwk = await exportJWK(keys.publicKey);
    const unsigned = (header: Record<string, unknown>, payload: Record<string, unknown>) =>
      `${Buffer.from(JSON.stringify(header)).toString('base64url')}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}.`;
    const claims = { htm: 'GET', htu, jti: 'j', iat: Math.floor(Date.now() / 1000), ath: createHash('sha256').update(token).digest('base64url') };
    const hmac = await new SignJWT(claims).setProtectedHeader({ alg: 'HS256', typ: 'dpop+jwt', jwk }).sign(randomBytes(32));
    const privateKeys = await generateKeyPair('ES256', { extractable: true });
    const privateJwk: JWK = await exportJWK(privateKeys.privateKey);
    const cases: Record<string, Promise<string> | string> = {
      'bad base64': '%%%.###.!!!',
      'one segment': 'abc',
      'JSON, not base64': '{"alg":"ES256"}.{}.x',
      'wrong typ': dpopProof(keys, { htm: 'GET', htu, token }, { typ: 'JWT' }),
      'no typ': dpopProof(keys, { htm: 'GET', htu, token }, { typ: undefined }),
      'alg none': unsigned({ alg: 'none', typ: 'dpop+jwt', jwk }, claims),
      HS256: hmac,
      'no jwk': dpopProof(keys, { htm: 'GET', htu, token }, { jwk: undefined }),
      'jwk a string': dpopProof(keys, { htm: 'GET', htu, token }, { jwk: 'key' }),
      'a private key in jwk': dpopProof(privateKeys, { htm: 'GET', htu, token }, { jwk: privateJwk }),
      'no jti': unsigned({ alg: 'ES256', typ: 'dpop+jwt', jwk }, { htm: 'GET', htu }),
      'a signature of garbage': `${(await dpopProof(keys, { htm: 'GET', htu, token })).split('.').slice(0, 2).join('.')}.${'A'.repeat(86)}`,
      'two proofs': dpopProof(keys, { htm: 'GET', htu, token }).then((p) => `${p}, ${p}`),
      'huge (6 KiB)': 'a'.repeat(6 * 1024),
    };
    for (const [name, made] of Object.entries(cases)) {
      const res = await dpopCall(idp, '/apis/v2/user', token, await made);
      expect(res.status, `${name}: ${res.text}`).to.equal(401);
      expectDpopChallenge(idp, res, 'invalid_dpop_proof');
    }
  });

  it('refuses the DPoP scheme for a token that is not bound, and for a personal token', async () => {
    const plain = await client.authorizationCodeGrant(
      config,
      await authorize(new Browser(idp.url), { clientId: app.clientId, redirectUri: app.redirectUri, state: 's1', scope: 'openid' }, app.user),
      { expectedState: 's1' },
    );
    expect(plain.token_type).to.equal('bearer');
    const proof = await dpopProof(keys, { htm: 'GET', htu: `${idp.url}/apis/v2/user`, token: plain.access_token });
    const unbound = await dpopCall(idp, '/apis/v2/user', plain.access_token, proof);
    expectApiError(unbound, 401, 'invalid_token');
    expect(unbound.body.error_description).to.match(/not bound to a DPoP key/);
    expect(unbound.headers.get('www-authenticate')).to.match(/^Bearer realm="[^"]+", resource_metadata="[^"]+", error="invalid_token"/);
    // The same token as Bearer is fine.
    expect((await call(idp, '/apis/v2/user', { token: plain.access_token })).status).to.equal(200);

    const ha = await personalToken(idp.db, app.user.id);
    const personal = await dpopCall(idp, '/apis/v2/user', ha, await dpopProof(keys, { htm: 'GET', htu: `${idp.url}/apis/v2/user`, token: ha }));
    expectApiError(personal, 401, 'invalid_token');
    expect(personal.body.error_description).to.match(/personal access token is not bound/);
  });

  it('answers a missing scope with a DPoP challenge when the token came as DPoP', async () => {
    const tokens = await boundTokens(app.user, 'openid');
    const proof = await dpopProof(keys, { htm: 'GET', htu: `${idp.url}/apis/v2/groups`, token: tokens.access_token });
    const res = await dpopCall(idp, '/apis/v2/groups', tokens.access_token, proof);
    expectApiError(res, 403, 'insufficient_scope');
    expect(res.headers.get('www-authenticate')).to.equal(apiChallenge(idp, { error: 'insufficient_scope', scope: 'groups:read-only', algs: ALGS }, 'DPoP'));
  });

  it('binds a public client\'s refresh token to the key too; a confidential client\'s is not', async () => {
    const user = await makeUser(idp.db);
    const group = await makeGroup(idp.db, user.id);
    const { clientId } = await makeApp(idp.db, user.id, group.id, { callbackURL: REDIRECT_URI, type: 'public' });
    const pub = await client.discovery(new URL(idp.url), clientId, { token_endpoint_auth_method: 'none' }, client.None(), { execute: [client.allowInsecureRequests] });
    const verifier = client.randomPKCECodeVerifier();
    const extra = { code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' };
    const callback = await authorize(new Browser(idp.url), { clientId, redirectUri: REDIRECT_URI, state: 'p', scope: 'openid', extra }, user);
    const tokens = await client.authorizationCodeGrant(pub, callback, { pkceCodeVerifier: verifier, expectedState: 'p' }, undefined, { DPoP: client.getDPoPHandle(pub, keys) });
    expect(tokens.token_type).to.equal('dpop');

    // Without a proof, or with another key's, the refresh token is refused.
    const bare = await tokenRequest(idp.url, { form: { grant_type: 'refresh_token', refresh_token: tokens.refresh_token!, client_id: clientId } });
    expect(bare.status, bare.text).to.equal(400);
    expect(bare.body.error).to.equal('invalid_grant');
    const stranger = await generateKeyPair('ES256');
    const wrongKey = await tokenRequest(idp.url, {
      form: { grant_type: 'refresh_token', refresh_token: tokens.refresh_token!, client_id: clientId },
      headers: { dpop: await dpopProof(stranger, { htm: 'POST', htu: `${idp.url}/login/oauth/access_token` }) },
    });
    expect(wrongKey.status, wrongKey.text).to.equal(400);
    expect(wrongKey.body.error).to.equal('invalid_grant');
    const refreshed = await client.refreshTokenGrant(pub, tokens.refresh_token!, undefined, { DPoP: client.getDPoPHandle(pub, keys) });
    expect(refreshed.token_type).to.equal('dpop');

    // The confidential client's refresh token is not bound: refreshed without a proof, it gives a Bearer token.
    const confidential = await boundTokens();
    const plain = await client.refreshTokenGrant(config, confidential.refresh_token!);
    expect(plain.token_type).to.equal('bearer');
  });
});

/**
 * Two instances of one deployment (one database, one Redis, one issuer) remember the same proofs:
 * a proof accepted by one is refused by the other.
 */
describeEachProfile('DPoP replay across instances', (profile) => {
  let a: RunningIdp;
  let b: RunningIdp;

  before(async () => {
    const keyPrefix = `idp-test:${randomBytes(4).toString('hex')}:`;
    a = await startIdp(profile, {}, undefined, keyPrefix);
    b = await startIdp(profile, { ISSUER: a.url }, a.database, keyPrefix);
  });

  after(async () => {
    await b?.stop();
    await a?.stop();
  });

  it('refuses at the second instance a proof the first accepted', async () => {
    const app = await makeClient(a.db);
    const keys = await generateKeyPair('ES256');
    const config = await client.discovery(new URL(a.url), app.clientId, app.clientSecret, undefined, { execute: [client.allowInsecureRequests] });
    const callback = await authorize(new Browser(a.url), { clientId: app.clientId, redirectUri: app.redirectUri, state: 's', scope: 'openid' }, app.user);
    const tokens = await client.authorizationCodeGrant(config, callback, { expectedState: 's' }, undefined, { DPoP: client.getDPoPHandle(config, keys) });
    const token = tokens.access_token;
    const proof = await dpopProof(keys, { htm: 'GET', htu: `${a.url}/apis/v2/user`, token });

    // B answers only for the issuer's host, as behind a load balancer.
    const viaB = (dpop: string) => new Browser(b.local).request('/apis/v2/user', { headers: { host: new URL(a.url).host, authorization: `DPoP ${token}`, dpop } });
    const fresh = await viaB(await dpopProof(keys, { htm: 'GET', htu: `${a.url}/apis/v2/user`, token }));
    expect(fresh.status, fresh.text).to.equal(200);

    expect((await dpopCall(a, '/apis/v2/user', token, proof)).status).to.equal(200);
    const replayed = await viaB(proof);
    expect(replayed.status, replayed.text).to.equal(401);
    expect(JSON.parse(replayed.text).error).to.equal('invalid_dpop_proof');
    expect(replayed.headers.get('www-authenticate')).to.match(/^DPoP .*error="invalid_dpop_proof"/);
  });
});
