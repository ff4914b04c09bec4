import { DN_PLACEHOLDER, USERNAME_PLACEHOLDER } from '../federation/ldap.js';
import type { UpstreamProvider } from '../federation/upstream.js';
import { Directory, DirectoryUnavailable, directorySettingsOf, fillFilter, type UnavailableReason } from './connection.js';
import { mappedRoles } from './groups.js';

/**
 * The provider page's Test connection and Test a user: what the directory answers with the
 * provider's settings as saved, on connections of their own (closed after), without signing
 * anyone in. A person's password is never asked: Test a user shows what a sign-in would read.
 */

export type ConnectionTest =
  | { ok: true; userBaseFound: boolean }
  | { ok: false; reason: UnavailableReason; message: string };

export type UserTest =
  | { ok: false; reason: UnavailableReason; message: string }
  | { ok: true; found: false; filter: string }
  | {
      ok: true;
      found: true;
      filter: string;
      dn: string;
      subject: string;
      username: string;
      email: string;
      name: string;
      /** Why the directory says the account is disabled, when it does. */
      disabled: string | null;
      /** The person's directory groups (normalized DNs). */
      groups: string[];
      /** What the group mapping would make of them here: each named group with its role (none: not a member). */
      mapped: { group: string; role: string | null }[];
    };

async function withDirectory<T>(provider: UpstreamProvider, work: (directory: Directory) => Promise<T>): Promise<T | { ok: false; reason: UnavailableReason; message: string }> {
  const directory = new Directory(provider.name, directorySettingsOf(provider));
  try {
    return await work(directory);
  } catch (err) {
    if (err instanceof DirectoryUnavailable) return { ok: false, reason: err.reason, message: err.message };
    throw err;
  } finally {
    await directory.close();
  }
}

export function testConnection(provider: UpstreamProvider): Promise<ConnectionTest> {
  return withDirectory(provider, async (directory) => ({ ok: true as const, userBaseFound: await directory.userBaseExists() }));
}

export function testUser(provider: UpstreamProvider, username: string): Promise<UserTest> {
  return withDirectory(provider, async (directory): Promise<UserTest> => {
    const filter = directory.settings.userFilter;
    const entry = await directory.findUser(username);
    if (!entry) return { ok: true, found: false, filter };
    const groups = await directory.groupsOf(entry);
    return {
      ok: true,
      found: true,
      filter: filter.replace(DN_PLACEHOLDER, entry.dn),
      dn: entry.dn,
      subject: entry.subject,
      username: entry.username,
      email: entry.email,
      name: entry.name,
      disabled: entry.disabled ?? null,
      groups,
      mapped: [...mappedRoles(directory.settings.groupMapping, groups)].map(([group, role]) => ({ group, role: role ?? null })),
    };
  });
}

/** The user filter Test a user sent for `username`: the typed username in it, escaped as a sign-in escapes it (the saved filter's, when the directory could not be asked). */
export function filterSent(provider: UpstreamProvider, result: UserTest, username: string): string {
  return fillFilter(result.ok ? result.filter : (provider.settings.user_filter ?? ''), USERNAME_PLACEHOLDER, username);
}
