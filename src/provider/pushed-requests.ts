import { UnsecuredJWT } from 'jose';
import type Provider from 'oidc-provider';

/** RFC 9126's request_uri prefix, as the library writes and reads it. */
const PUSHED_REQUEST_URN = 'urn:ietf:params:oauth:request_uri:';

/** How long a request pushed again lives: the library's own lifetime for a pushed request (its MAX_TTL). */
const PUSHED_REQUEST_TTL_S = 60;

/**
 * Pushes an authorization request again on the client's behalf, as the library's PAR endpoint
 * stores one it was sent (lib/actions/authorization/pushed_authorization_requests.js: an unsecured
 * JWT of the parameters, issued by the client, for this issuer, trusted as the client was when it
 * pushed the first time), and returns its request_uri. `params` are a flow's parameters as the
 * library checked them when the client pushed them first; the client authenticated then. Undefined
 * when the client no longer exists.
 */
export async function pushAgain(provider: Provider, params: Record<string, string>): Promise<string | undefined> {
  const client = params.client_id ? await provider.Client.find(params.client_id) : undefined;
  if (!client) return undefined;
  const now = Math.floor(Date.now() / 1000);
  const request = new UnsecuredJWT({ ...params })
    .setIssuedAt(now)
    .setIssuer(client.clientId)
    .setAudience(provider.issuer)
    .setExpirationTime(now + PUSHED_REQUEST_TTL_S)
    .setNotBefore(now)
    .encode();
  // The library stores `trusted` as a boolean (its types say a list): true unless the client is public.
  const pushed = new provider.PushedAuthorizationRequest({ request, trusted: (client.clientAuthMethod !== 'none') as never });
  return `${PUSHED_REQUEST_URN}${await pushed.save(PUSHED_REQUEST_TTL_S)}`;
}
