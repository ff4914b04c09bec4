import type * as client from 'openid-client';
import type { SignInProviderRow } from '../../db/sign-in-providers.js';

/**
 * What every kind of upstream provider (OpenID Connect, GitHub, GitLab, Google, Microsoft) gives
 * the sign-in flow: the openid-client configuration to run the authorization code flow with, and
 * the person it signed in, read the way that kind says it. The flow itself (state, nonce, PKCE,
 * the callback, linking) is the same for every kind.
 */

/** A provider as the flow uses it: the row with its secret opened and its settings parsed. */
export interface UpstreamProvider {
  id: number;
  slug: string;
  kind: string;
  name: string;
  clientId: string;
  clientSecret: string;
  scopes: string[];
  settings: Record<string, string>;
  allowSignUp: boolean;
  /** Lowercase e-mail domains; empty allows any. */
  allowedDomains: string[];
  trustMfa: boolean;
  disabled: boolean;
  row: SignInProviderRow;
}

/** The person an upstream signed in, as one shape whatever the kind. */
export interface UpstreamProfile {
  /** Stable and never reassigned by the upstream: `sub`, or GitHub's numeric id. */
  subject: string;
  /** A login or preferred username, suggested as the username at sign-up. */
  username: string;
  name: string;
  /** Lowercase; '' when the upstream gave none. */
  email: string;
  /** Whether the upstream says it verified `email` (GitHub: the verified primary address only). */
  emailVerified: boolean;
  /** The upstream's authentication methods (`amr`), when it says. */
  amr: string[];
}

/** One field of a kind's settings, for the admin form and the CLI. */
export interface KindSetting {
  /** The JSON key, the form field name and the CLI flag (`--<name>`). */
  name: string;
  label: string;
  hint: string;
  required: boolean;
  /** Checks and normalizes a value; throws an Error whose message names what is wrong. */
  parse(value: string): string;
  /** Typed over several lines (a certificate, a mapping): a text area on the form. */
  multiline?: boolean;
  /** Shown on the form when nothing is stored yet. */
  defaultValue?: string;
}

/** What every kind of sign-in provider has, whichever way it signs people in. */
export interface ProviderKind {
  /** As stored: `oidc`, `github`, `gitlab`, `google`, `microsoft`, `ldap`. */
  kind: string;
  /** For people: "OpenID Connect", "GitHub", "LDAP / Active Directory". */
  label: string;
  settings: KindSetting[];
  /** The scopes asked for when the administrator names none (none for a directory). */
  defaultScopes: string[];
  /**
   * `redirect`: the browser is sent to the provider and comes back with a code (OAuth, OpenID
   * Connect). `directory`: the sign-in form's own username and password are checked by the
   * provider (LDAP); its `client_id` and `client_secret` are the service account's DN and password.
   */
  signIn: 'redirect' | 'directory';
}

/** A directory (LDAP, Active Directory): see services/directory. */
export interface DirectoryKind extends ProviderKind {
  signIn: 'directory';
}

export interface UpstreamKind extends ProviderKind {
  signIn: 'redirect';
  /** The openid-client configuration (discovery, or the kind's fixed endpoints). May be cached per provider by the caller. */
  configure(provider: UpstreamProvider, options: { timeoutMs: number; allowHttp?: boolean }): Promise<client.Configuration>;
  /** Extra parameters of the authorization request (Google's `hd`), when the kind has any. */
  authorizationParameters?(provider: UpstreamProvider): Record<string, string>;
  /** Whether the flow sends and checks a `nonce` (an ID token comes back). */
  usesIdToken: boolean;
  /** The person signed in, from the token response (its ID token) and the kind's user endpoints. */
  profile(config: client.Configuration, tokens: client.TokenEndpointResponse & client.TokenEndpointResponseHelpers, options: { timeoutMs: number }): Promise<UpstreamProfile>;
}
