/**
 * The names of every cookie the service sets. Under https they carry a prefix the browser
 * enforces: `__Host-` (Secure, Path=/, no Domain: no other host or path can set or shadow it)
 * where the cookie lives at `/`; `__Secure-` (Secure) for oidc-provider's two interaction
 * cookies, which it scopes to one flow's path and so cannot be `__Host-`.
 */
export interface CookieNames {
  session: string;
  interaction: string;
  resume: string;
  csrf: string;
  /** A sign-in whose password was right, waiting for its second factor (signed, five minutes). */
  secondFactor: string;
  /** A passkey challenge given to this browser (signed, five minutes). */
  passkey: string;
  /** The one-time message of a POST to the page it redirects to (web/flash.ts). */
  flash: string;
  /** What a password reset gives its browser for a few minutes: removing what else reaches the account (signed). */
  recovery: string;
}

export function cookieNames(secure: boolean): CookieNames {
  if (!secure) return { session: 'idp_session', interaction: 'idp_interaction', resume: 'idp_interaction_resume', csrf: 'idp_csrf', secondFactor: 'idp_2fa', passkey: 'idp_passkey', flash: 'idp_flash', recovery: 'idp_recovery' };
  return {
    session: '__Host-idp_session',
    interaction: '__Secure-idp_interaction',
    resume: '__Secure-idp_interaction_resume',
    csrf: '__Host-idp_csrf',
    secondFactor: '__Host-idp_2fa',
    passkey: '__Host-idp_passkey',
    flash: '__Host-idp_flash',
    recovery: '__Host-idp_recovery',
  };
}
