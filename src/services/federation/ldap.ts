import { X509Certificate } from 'node:crypto';
import { hasControlCharacter } from '../../control-characters.js';
import type { DirectoryKind, KindSetting } from './upstream.js';

/**
 * The LDAP kind (OpenLDAP, FreeIPA, 389 Directory Server, Active Directory): its settings as the
 * administrator types them, each checked here. The sign-in itself is in services/directory. The
 * provider's `client_id` is the service account's DN and its `client_secret` that account's
 * password (sealed at rest like every client secret).
 */

/** Where the typed username goes in the user filter; escaped as RFC 4515 says before it does. */
export const USERNAME_PLACEHOLDER = '{{username}}';
/** Where the person's DN goes in the group filter. */
export const DN_PLACEHOLDER = '{{dn}}';

const MAX_DN = 1000;
const MAX_FILTER = 1000;
const MAX_CA = 20_000;
const MAX_MAPPING_LINES = 50;
const ATTRIBUTE = /^(?:[A-Za-z][A-Za-z0-9-]{0,62}|[0-9]+(?:\.[0-9]+)+)$/;
/** A Horizon group's path, as groups are addressed. */
const GROUP_PATH = /^[a-z0-9](?:[a-z0-9-]{0,62})$/i;
export const MAPPING_ROLES = ['owner', 'maintainer', 'member'] as const;
export type MappingRole = (typeof MAPPING_ROLES)[number];

/** `ldaps://host[:port]`, or `ldap://host[:port]` (then always upgraded with StartTLS): no path, no credentials. */
export function parseDirectoryUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    throw new Error('the URL must be ldaps://host:port, or ldap://host:port (StartTLS is then always used)');
  }
  if (url.protocol !== 'ldaps:' && url.protocol !== 'ldap:') throw new Error('the URL must start with ldaps:// or ldap:// (StartTLS is then always used)');
  if (!url.hostname) throw new Error('the URL must name the directory\'s host, such as ldaps://ldap.example.com');
  if (url.username || url.password) throw new Error('the URL must not carry credentials: the service account has fields of its own');
  if ((url.pathname && url.pathname !== '/') || url.search || url.hash) throw new Error('the URL must be only the scheme, host and port: the search base has a field of its own');
  return `${url.protocol}//${url.host}`;
}

/** A DN as typed: not empty, no control characters, each RDN an `attribute=value`. */
export function parseDn(value: string, what = 'the DN'): string {
  const dn = value.trim();
  if (!dn) throw new Error(`${what} is required`);
  if (dn.length > MAX_DN) throw new Error(`${what} must be at most ${MAX_DN} characters`);
  if (hasControlCharacter(dn)) throw new Error(`${what} must not contain control characters`);
  if (!/^[A-Za-z0-9.-]+\s*=/.test(dn)) throw new Error(`${what} must be a DN such as ou=people,dc=example,dc=org`);
  return dn;
}

/** An LDAP filter as typed: in parentheses, balanced, with the placeholder it needs. */
function parseFilter(value: string, placeholder: string, what: string, example: string): string {
  const filter = value.trim();
  if (filter.length > MAX_FILTER) throw new Error(`${what} must be at most ${MAX_FILTER} characters`);
  if (hasControlCharacter(filter)) throw new Error(`${what} must not contain control characters`);
  if (!filter.startsWith('(') || !filter.endsWith(')')) throw new Error(`${what} must be in parentheses, such as ${example}`);
  let depth = 0;
  for (const c of filter.replace(/\\./g, '')) {
    if (c === '(') depth += 1;
    if (c === ')') depth -= 1;
    if (depth < 0) break;
  }
  if (depth !== 0) throw new Error(`${what} must have as many ( as ), such as ${example}`);
  if (!filter.includes(placeholder)) throw new Error(`${what} must contain ${placeholder} where the ${placeholder === USERNAME_PLACEHOLDER ? 'typed username' : 'person\'s DN'} goes, such as ${example}`);
  return filter;
}

function parseAttribute(value: string, what: string): string {
  const name = value.trim();
  if (!ATTRIBUTE.test(name)) throw new Error(`${what} must be an attribute name, such as mail`);
  return name;
}

/** One or more PEM certificates, each readable. */
export function parseCaCertificate(value: string): string {
  const pem = value.replace(/\r\n/g, '\n').trim();
  if (pem.length > MAX_CA) throw new Error(`the CA certificate must be at most ${MAX_CA} characters`);
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (!blocks.length) throw new Error('the CA certificate must be PEM: -----BEGIN CERTIFICATE----- …');
  for (const block of blocks) {
    try {
      new X509Certificate(block);
    } catch {
      throw new Error('the CA certificate could not be read: paste the whole PEM block, BEGIN and END lines included');
    }
  }
  return blocks.join('\n');
}

/** One line of the group mapping: a directory group's DN, and the Horizon group and role it gives. */
export interface GroupMapping {
  /** As typed. */
  directoryGroup: string;
  groupPath: string;
  role: MappingRole;
}

/**
 * The group mapping as typed, one line per directory group:
 * `cn=developers,ou=groups,dc=example,dc=org = platform member`. The role is optional (member).
 */
export function parseGroupMapping(value: string): GroupMapping[] {
  const lines = value.replace(/\r\n/g, '\n').split('\n').map((line) => line.trim()).filter((line) => line && !line.startsWith('#'));
  if (lines.length > MAX_MAPPING_LINES) throw new Error(`the group mapping must have at most ${MAX_MAPPING_LINES} lines`);
  const mappings: GroupMapping[] = [];
  for (const [index, line] of lines.entries()) {
    const at = line.lastIndexOf(' = ') >= 0 ? line.lastIndexOf(' = ') : line.lastIndexOf('=>');
    const example = 'cn=developers,ou=groups,dc=example,dc=org = platform member';
    if (at < 0) throw new Error(`group mapping line ${index + 1} must be "<directory group DN> = <group> [owner|maintainer|member]", such as ${example}`);
    const directoryGroup = parseDn(line.slice(0, at), `the directory group on group mapping line ${index + 1}`);
    const [groupPath = '', role = 'member', ...rest] = line.slice(at + (line[at] === '=' ? 2 : 3)).trim().split(/\s+/);
    if (!GROUP_PATH.test(groupPath) || rest.length) throw new Error(`group mapping line ${index + 1} must end with a group's path and, if not member, a role, such as ${example}`);
    if (!(MAPPING_ROLES as readonly string[]).includes(role)) throw new Error(`the role on group mapping line ${index + 1} must be owner, maintainer or member`);
    mappings.push({ directoryGroup, groupPath: groupPath.toLowerCase(), role: role as MappingRole });
  }
  return mappings;
}

const setting = (name: string, label: string, hint: string, required: boolean, parse: (value: string) => string, extra: Partial<KindSetting> = {}): KindSetting => ({ name, label, hint, required, parse, ...extra });

export const ldapDirectory: DirectoryKind = {
  kind: 'ldap',
  label: 'LDAP / Active Directory',
  signIn: 'directory',
  defaultScopes: [],
  settings: [
    setting('url', 'Directory URL', 'ldaps://ldap.example.com:636, or ldap://ldap.example.com:389 (StartTLS is then always used; a directory without TLS is refused).', true, parseDirectoryUrl),
    setting('ca_certificate', 'CA certificate', 'The PEM certificate of the CA that signed the directory\'s certificate, when it is not one the system trusts.', false, parseCaCertificate, { multiline: true }),
    setting('user_base', 'User search base', 'Where people are searched, such as ou=people,dc=example,dc=org (the whole subtree).', true, (v) => parseDn(v, 'the user search base')),
    setting('user_filter', 'User filter', `Finds one person by the typed username, which replaces ${USERNAME_PLACEHOLDER} escaped: (uid=${USERNAME_PLACEHOLDER}) for OpenLDAP, (sAMAccountName=${USERNAME_PLACEHOLDER}) for Active Directory.`, true, (v) => parseFilter(v, USERNAME_PLACEHOLDER, 'the user filter', `(uid=${USERNAME_PLACEHOLDER})`), { defaultValue: `(uid=${USERNAME_PLACEHOLDER})` }),
    setting('username_attribute', 'Username attribute', 'The attribute that becomes the username here at a first sign-in: uid, or sAMAccountName for Active Directory.', true, (v) => parseAttribute(v, 'the username attribute'), { defaultValue: 'uid' }),
    setting('email_attribute', 'E-mail attribute', 'The person\'s address (counted as verified): mail.', true, (v) => parseAttribute(v, 'the e-mail attribute'), { defaultValue: 'mail' }),
    setting('name_attribute', 'Name attribute', 'The person\'s full name: cn, or displayName.', true, (v) => parseAttribute(v, 'the name attribute'), { defaultValue: 'cn' }),
    setting('id_attribute', 'Unique ID attribute', 'Never reassigned nor changed by a rename: entryUUID (OpenLDAP), objectGUID (Active Directory), ipaUniqueID (FreeIPA).', true, (v) => parseAttribute(v, 'the unique ID attribute'), { defaultValue: 'entryUUID' }),
    setting('group_base', 'Group search base', 'Where groups are searched, such as ou=groups,dc=example,dc=org. Empty: only the person\'s memberOf attribute is read.', false, (v) => parseDn(v, 'the group search base')),
    setting('group_filter', 'Group filter', `Finds the person's groups, ${DN_PLACEHOLDER} being the person's DN: (member=${DN_PLACEHOLDER}), or (|(member=${DN_PLACEHOLDER})(uniqueMember=${DN_PLACEHOLDER})).`, false, (v) => parseFilter(v, DN_PLACEHOLDER, 'the group filter', `(member=${DN_PLACEHOLDER})`), { defaultValue: `(member=${DN_PLACEHOLDER})` }),
    setting('group_mapping', 'Group mapping', 'One line per directory group: its DN, =, a group\'s path here and a role (owner, maintainer, member). Applied at each sign-in: the person is added, given the role, or removed from the groups named here.', false, (v) => {
      parseGroupMapping(v);
      return v.replace(/\r\n/g, '\n').split('\n').map((line) => line.trim()).filter(Boolean).join('\n');
    }, { multiline: true }),
  ],
};
