/**
 * The words every layer shares: roles, visibility levels, scopes and lifetimes. This file is the
 * bottom floor: it imports nothing of the project, and anything below services/ or provider/ that
 * needs one of these words takes it from here rather than reaching up.
 */

const DAY = 24 * 60 * 60;

/** A member's role in a group, weakest last. */
export const ROLES = ['owner', 'maintainer', 'member'] as const;
export type Role = (typeof ROLES)[number];

export const VISIBILITY_LEVELS = ['private', 'internal', 'public'] as const;
export type VisibilityLevel = (typeof VISIBILITY_LEVELS)[number];

/**
 * An OAuth application's type. `confidential`: a server that keeps a client secret and
 * authenticates with it at the token endpoint. `public`: a native or single-page application
 * that cannot keep a secret: it has none, and proves the code is its own with PKCE (S256).
 */
export const CLIENT_TYPES = ['confidential', 'public'] as const;
export type ClientType = (typeof CLIENT_TYPES)[number];

/**
 * The scopes an application may ask for, and what the consent page says about each, in plain
 * words. The words are the whole of what the scope gives an application: `GET /apis/v2/user`
 * (policies/user-fields.ts), the ID token and userinfo release no more, and an OAuth token cannot
 * create, change or delete OAuth applications (that takes the person's own personal access token).
 */
export const SCOPES = {
  'groups:read-only': 'See your username and name, the groups you belong to and your role in each',
  'groups:read-write': 'See your username and name and your groups; leave your groups, change their members as your role allows, change or delete the groups you own and see their OAuth applications',
  openid: 'Confirm your identity (your user id)',
  profile: 'See your username and name',
  email: 'See your email address once you have verified it',
} as const;

/**
 * What the API scopes give a personal access token, as the Access tokens page says it. The
 * person's own token also manages the OAuth applications of the groups they own, which an
 * application's token never does.
 */
export const PERSONAL_TOKEN_SCOPES: Record<PersonalTokenScope, string> = {
  'groups:read-only': 'See the groups you belong to and your role in each',
  'groups:read-write': 'Change your groups and manage the OAuth applications of groups you own',
  admin: 'Administer the site: list, disable and enable users, read the site audit log',
};

export type Scope = keyof typeof SCOPES;
/** What a flow that asks for no known scope is granted. */
export const DEFAULT_SCOPE: Scope = 'groups:read-only';
/** The scopes that open the HTTP API (the others are OpenID Connect's). */
export const API_SCOPES = ['groups:read-only', 'groups:read-write'] as const;

/**
 * `admin` opens `/apis/v2/admin`. Only a personal access token carries it (no application can
 * ask for it), only a site administrator can make one, and it works only while its owner is one.
 */
export const ADMIN_SCOPE = 'admin';

/** The scopes a personal access token may have. */
export const PERSONAL_TOKEN_SCOPE_LIST = [...API_SCOPES, ADMIN_SCOPE] as const;
export type PersonalTokenScope = (typeof PERSONAL_TOKEN_SCOPE_LIST)[number];

export function isScope(value: string): value is Scope {
  return Object.hasOwn(SCOPES, value);
}

/**
 * The known scopes of a request's `scope`, each once, in the words the consent page uses: what
 * the pages that ask a person to authorize (consent, the device flow's confirmation) list.
 */
export function describeScopes(scope: string): Array<{ scope: Scope; description: string }> {
  return [...new Set(splitScopes(scope))].filter(isScope).map((known) => ({ scope: known, description: SCOPES[known] }));
}

/**
 * A scope list as clients send it: RFC 6749 separates scopes with spaces, and clients written for
 * GitHub (which accepts both) separate them with commas. Both count here; empty items are dropped.
 */
export function splitScopes(value: string): string[] {
  return value.split(/[ ,]+/).filter(Boolean);
}

/**
 * The scopes of a list this service knows, space separated, or undefined when none is left.
 * Unknown scopes are dropped at refresh as they are at authorize, so a client that sends its
 * configured scope again on refresh is not refused for a scope that was never granted because
 * it does not exist here. `offline_access` is one of them: refresh tokens are always issued, so
 * asking for one changes nothing.
 */
export function knownScopes(value: string): string | undefined {
  const known = [...new Set(splitScopes(value).filter(isScope))];
  return known.length ? known.join(' ') : undefined;
}

/** Lifetimes in seconds, by oidc-provider model name. */
export const TTL = {
  AuthorizationCode: 600,
  AccessToken: 3600,
  /** An application's token for itself (client credentials grant): an hour, as an access token. */
  ClientCredentials: 3600,
  IdToken: 3600,
  RefreshToken: 30 * DAY,
  Interaction: 60 * 60,
  Session: 14 * DAY,
  Grant: 365 * DAY,
} as const;

/**
 * Authentication context classes, the ID token's `acr` when a client asks (`acr_values`): "1" for
 * one factor (a password, or a passkey that did not verify its user), "2" for two (a password
 * and a code or passkey, or a passkey that verified its user: the methods' `amr` says `mfa`).
 */
export const ACR_VALUES = ['1', '2'] as const;

export function acrOf(amr: readonly string[]): (typeof ACR_VALUES)[number] {
  return amr.includes('mfa') ? '2' : '1';
}

/**
 * What a group's webhooks can be told of: each is the X-Horizon-Event header of its deliveries
 * and a box on the webhook's form.
 */
export const WEBHOOK_EVENTS = [
  'member.added', 'member.removed', 'member.role_changed',
  'application.created', 'application.updated', 'application.deleted',
  'client_secret.created', 'client_secret.revoked',
  'group.updated', 'group.deleted',
  'credentials.revoked',
] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

export function isWebhookEvent(value: string): value is WebhookEvent {
  return (WEBHOOK_EVENTS as readonly string[]).includes(value);
}

/**
 * How a resource's access tokens are made: `opaque`, an `ho_` token the resource's server checks
 * at the introspection endpoint with its own credentials; `jwt`, an RFC 9068 JWT (`typ: at+jwt`,
 * `aud` the resource) it verifies with the service's published keys, without asking.
 */
export const TOKEN_FORMATS = ['opaque', 'jwt'] as const;
export type TokenFormat = (typeof TOKEN_FORMATS)[number];

/** Scope names a resource may not define: the service's own, and OpenID Connect's. */
export const RESERVED_SCOPES: ReadonlySet<string> = new Set([...Object.keys(SCOPES), 'offline_access', 'address', 'phone', ADMIN_SCOPE]);
