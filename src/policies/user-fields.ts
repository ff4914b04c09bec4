/**
 * What `GET /apis/v2/user` gives a token of its user, as the consent page words each scope
 * (vocabulary.ts SCOPES): `openid` the id alone; `profile`, and either groups scope, also the
 * username and name (servers written for the first version of this API read `username` with a
 * `groups:read-only` token); `email` the address and whether it is verified. A personal access
 * token is the person's own and gets all of it. An address that is not verified is never given,
 * whatever the token (the presenter leaves it out), so that no one who links accounts by e-mail
 * can be handed an address its holder never proved.
 */
export interface UserFields {
  /** username and name */
  profile: boolean;
  /** email (when verified) and emailVerified */
  email: boolean;
}

const PROFILE_SCOPES = ['profile', 'groups:read-only', 'groups:read-write'];

export function userFieldsFor(token: { kind: 'oauth' | 'personal'; scopes: ReadonlySet<string> }): UserFields {
  if (token.kind === 'personal') return { profile: true, email: true };
  return { profile: PROFILE_SCOPES.some((scope) => token.scopes.has(scope)), email: token.scopes.has('email') };
}
