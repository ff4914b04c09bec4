import { ldapDirectory } from './ldap.js';
import { openIdConnect } from './oidc.js';
import { presetKinds } from './presets/index.js';
import type { DirectoryKind, ProviderKind, UpstreamKind } from './upstream.js';

/** Every kind of sign-in provider this service can sign in with, by its stored name. */
export const upstreamKinds: Record<string, ProviderKind> = {
  oidc: openIdConnect,
  ...presetKinds,
  ldap: ldapDirectory,
};

export function kindOf(kind: string): ProviderKind | undefined {
  return Object.hasOwn(upstreamKinds, kind) ? upstreamKinds[kind] : undefined;
}

/** A kind that sends the browser to the provider ("Continue with …"); undefined for a directory. */
export function redirectKindOf(kind: string): UpstreamKind | undefined {
  const found = kindOf(kind);
  return found?.signIn === 'redirect' ? (found as UpstreamKind) : undefined;
}

/** A kind whose provider checks the sign-in form's username and password (LDAP). */
export function directoryKindOf(kind: string): DirectoryKind | undefined {
  const found = kindOf(kind);
  return found?.signIn === 'directory' ? (found as DirectoryKind) : undefined;
}
