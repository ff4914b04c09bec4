/** The scopes of CONTRACT §4 and what the consent page says about each, in plain words. */
export const SCOPES = {
  'groups:read-only': 'See the groups you belong to and your role in each',
  'groups:read-write': 'Change your groups and manage the OAuth applications of groups you own',
  openid: 'Confirm your identity (your user id)',
  profile: 'See your username and name',
  email: 'See your email address',
} as const;

export type Scope = keyof typeof SCOPES;
export const DEFAULT_SCOPE: Scope = 'groups:read-only';
export const API_SCOPES = ['groups:read-only', 'groups:read-write'] as const;

export function isScope(value: string): value is Scope {
  return Object.hasOwn(SCOPES, value);
}
