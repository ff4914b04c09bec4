import { expect } from 'chai';
import * as client from 'openid-client';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { Browser } from '../helpers/browser.js';
import { makeClient, type TestUser } from '../helpers/factories.js';
import { setEmailVerified } from '../helpers/email-verification.js';
import { authorize, callbackOf, passProvider } from '../helpers/oauth.js';

const REDIRECT_URI = 'http://127.0.0.1:9999/openid-client/callback';

describeEachProfile('openid-client v6 against the provider', (profile) => {
  const server = useIdp(profile);
  let user: TestUser;
  let config: client.Configuration;

  before(async () => {
    const app = await makeClient(server.db, { redirectUri: REDIRECT_URI });
    user = app.user;
    // The address is released (ID token, userinfo) only once verified.
    await setEmailVerified(server.db, user, true);
    // Discovery over plain http is allowed here only because the test server is on loopback.
    config = await client.discovery(new URL(server.url), app.clientId, app.clientSecret, undefined, {
      execute: [client.allowInsecureRequests],
    });
  });

  it('discovers, authorizes with PKCE, validates the ID token, refreshes, reads userinfo and revokes', async () => {
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const nonce = client.randomNonce();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT_URI,
      scope: 'openid profile email groups:read-only',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    const extra = Object.fromEntries([...url.searchParams].filter(([k]) => ['code_challenge', 'code_challenge_method', 'nonce'].includes(k)));
    const callback = await authorize(
      new Browser(server.url),
      { clientId: url.searchParams.get('client_id')!, redirectUri: REDIRECT_URI, state, scope: url.searchParams.get('scope')!, extra },
      { username: user.email, password: user.password },
    );

    const tokens = await client.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: verifier,
      expectedState: state,
      expectedNonce: nonce,
    });
    expect(tokens.access_token).to.match(/^ho_/);
    expect(tokens.refresh_token).to.match(/^hr_/);
    expect(tokens.token_type).to.equal('bearer');
    const claims = tokens.claims()!;
    expect(claims.sub).to.equal(String(user.id));
    expect(claims.iss).to.equal(server.url);

    const info = await client.fetchUserInfo(config, tokens.access_token, claims.sub);
    expect(info.preferred_username).to.equal(user.username);
    expect(info.email).to.equal(user.email);

    const groups = await client.fetchProtectedResource(config, tokens.access_token, new URL(`${server.url}/apis/v2/groups`), 'GET');
    expect(groups.status).to.equal(200);

    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
    expect(refreshed.access_token).to.match(/^ho_/).and.not.equal(tokens.access_token);
    expect(refreshed.refresh_token).to.match(/^hr_/).and.not.equal(tokens.refresh_token);

    await client.tokenRevocation(config, refreshed.access_token);
    const introspected = await client.tokenIntrospection(config, refreshed.access_token);
    expect(introspected.active).to.equal(false);
    const after = await fetch(`${server.url}/apis/v2/groups`, { headers: { authorization: `Bearer ${refreshed.access_token}` } });
    expect(after.status).to.equal(401);
  });

  it('signs in with a nonce and neither state nor PKCE, the ID token carrying the nonce back (grant\'s nonce: true)', async () => {
    const nonce = client.randomNonce();
    const url = client.buildAuthorizationUrl(config, { redirect_uri: REDIRECT_URI, scope: 'openid groups:read-only', nonce });
    expect(url.searchParams.has('state')).to.equal(false);
    const page = await passProvider(new Browser(server.url), url.href, { username: user.email, password: user.password }, { callback: REDIRECT_URI });
    const callback = callbackOf(page, REDIRECT_URI);
    expect(callback.searchParams.has('error'), callback.href).to.equal(false);

    // openid-client checks the ID token's nonce; a code injected from another flow would fail here.
    const tokens = await client.authorizationCodeGrant(config, callback, { expectedNonce: nonce });
    expect(tokens.access_token).to.match(/^ho_/);
    expect(tokens.claims()!.nonce).to.equal(nonce);
  });
});
