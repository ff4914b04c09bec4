import { randomBytes } from 'node:crypto';
import { AuthorizationCode } from 'simple-oauth2';

export function connect({ issuer, clientId, clientSecret }: { issuer: string; clientId: string; clientSecret: string }) {
  return new AuthorizationCode({
    client: { id: clientId, secret: clientSecret },
    auth: { tokenHost: issuer, authorizePath: '/login/oauth/authorize', tokenPath: '/login/oauth/access_token' },
  });
}

/** No token, or the API answered 401: keep state in the session, then 302 to url. */
export function startSignIn(oauth: AuthorizationCode, redirectUri: string) {
  const state = randomBytes(32).toString('base64url');
  return { url: oauth.authorizeURL({ redirect_uri: redirectUri, scope: 'groups:read-only', state }), state };
}

/** On the callback: the state must be the one kept; then the code is exchanged (HTTP Basic client auth). */
export async function finishSignIn(oauth: AuthorizationCode, redirectUri: string, callbackUrl: URL, savedState: string) {
  if (callbackUrl.searchParams.get('state') !== savedState) throw new Error('state mismatch: not a sign-in started here');
  const code = callbackUrl.searchParams.get('code');
  if (!code) throw new Error(`not authorized: ${callbackUrl.searchParams.get('error')}`); // access_denied: the user clicked Cancel
  const token = await oauth.getToken({ code, redirect_uri: redirectUri });
  return token; // token.token.access_token is ho_…, expire_in "3600"; token.refresh() rotates the refresh token
}
