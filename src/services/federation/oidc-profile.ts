import * as client from 'openid-client';
import type { UpstreamProfile } from './upstream.js';
import { UpstreamAnswerError, amrClaim, stringClaim, trueClaim } from './discovery.js';

/**
 * The person an OpenID Connect upstream signed in, read from its validated ID token, with the
 * userinfo endpoint asked only when the ID token lacks the address or the name (GitLab and Google
 * put them in the ID token; a provider that keeps them for userinfo still works). Userinfo is
 * accepted only for the same `sub`.
 */
export async function oidcClaims(config: client.Configuration, tokens: client.TokenEndpointResponse & client.TokenEndpointResponseHelpers, what: string): Promise<Record<string, unknown>> {
  const idToken = tokens.claims();
  if (!idToken) throw new UpstreamAnswerError(`${what} sent no ID token`);
  const claims: Record<string, unknown> = { ...idToken };
  const lacking = !stringClaim(claims, 'email') || !stringClaim(claims, 'name');
  if (lacking && config.serverMetadata().userinfo_endpoint && tokens.access_token) {
    const userinfo = await client.fetchUserInfo(config, tokens.access_token, idToken.sub);
    for (const [name, value] of Object.entries(userinfo)) {
      if (claims[name] === undefined) claims[name] = value;
    }
  }
  return claims;
}

/** The common reading: `sub`, the named username claim, `name`, `email` with `email_verified`, `amr`. */
export function standardProfile(claims: Record<string, unknown>, usernameClaim: string): UpstreamProfile {
  const email = stringClaim(claims, 'email').toLowerCase();
  return {
    subject: stringClaim(claims, 'sub'),
    username: stringClaim(claims, usernameClaim) || email.split('@')[0] || '',
    name: stringClaim(claims, 'name'),
    email,
    emailVerified: !!email && trueClaim(claims, 'email_verified'),
    amr: amrClaim(claims),
  };
}
