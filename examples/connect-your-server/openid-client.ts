import * as client from 'openid-client';

export interface Registration {
  issuer: string; // http://localhost:3000
  clientId: string;
  clientSecret: string; // hs_…
  redirectUri: string; // exactly the application's Authorization callback URL
}

export async function connect({ issuer, clientId, clientSecret }: Registration): Promise<client.Configuration> {
  const url = new URL(issuer);
  // openid-client refuses plain http: allow it only for a provider on http://localhost.
  const execute = url.protocol === 'http:' ? [client.allowInsecureRequests] : [];
  return client.discovery(url, clientId, clientSecret, undefined, { execute });
}

/** No token, or the API answered 401: keep state and codeVerifier in the session, then 302 to url. */
export async function startSignIn(config: client.Configuration, redirectUri: string) {
  const state = client.randomState();
  const codeVerifier = client.randomPKCECodeVerifier();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri,
    scope: 'groups:read-only',
    state,
    code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
    code_challenge_method: 'S256',
  });
  return { url, state, codeVerifier };
}

/** On the callback: checks state (and iss), exchanges the code; keep the tokens on the server. */
export async function finishSignIn(config: client.Configuration, callbackUrl: URL, saved: { state: string; codeVerifier: string }) {
  return client.authorizationCodeGrant(config, callbackUrl, { pkceCodeVerifier: saved.codeVerifier, expectedState: saved.state });
}

/** The user's groups, or undefined when the token is unknown, invalid, expired or revoked: sign in again. */
export async function listGroups(issuer: string, accessToken: string) {
  const res = await fetch(`${issuer}/apis/v2/groups?pageSize=50`, { headers: { authorization: `Bearer ${accessToken}` } });
  if (res.status === 401) return undefined;
  if (!res.ok) throw new Error(`GET /apis/v2/groups answered ${res.status}`);
  const body = (await res.json()) as { data: { total: number; items: Array<{ id: number; name: string; path: string; role: string }> } };
  return body.data.items;
}
