import type { ConnectionOptions } from 'node:tls';
import { Client, Filter, InvalidCredentialsError, SizeLimitExceededError, type Entry } from 'ldapts';
import { Pool } from 'tarn';
import { DN_PLACEHOLDER, parseGroupMapping, USERNAME_PLACEHOLDER, type GroupMapping } from '../federation/ldap.js';
import type { UpstreamProvider } from '../federation/upstream.js';
import { toIso } from '../../time.js';

/**
 * Talking to a directory over LDAP (ldapts): TLS always (ldaps://, or ldap:// upgraded with
 * StartTLS before anything is sent), the service account's bind, searching people and their
 * groups, and a person's own bind to check their password. Connections bound as the service
 * account are kept in a small pool per provider (a TLS handshake and a bind per sign-in would
 * double a directory's work); every step has 5 s, and a directory that does not answer is
 * DirectoryUnavailable, never a hang.
 */

/** How long one step (connecting, StartTLS, a bind, a search) may take. */
export const DIRECTORY_TIMEOUT_MS = 5000;
/** Service connections kept open to one directory. */
const POOL_SIZE = 4;
/** A connection unused this long is closed. */
const IDLE_MS = 60_000;

/** A provider's directory settings, as services/federation/ldap.ts checked them. */
export interface DirectorySettings {
  url: string;
  caCertificate: string;
  userBase: string;
  userFilter: string;
  usernameAttribute: string;
  emailAttribute: string;
  nameAttribute: string;
  idAttribute: string;
  groupBase: string;
  groupFilter: string;
  groupMapping: GroupMapping[];
  bindDn: string;
  bindPassword: string;
}

export function directorySettingsOf(provider: UpstreamProvider): DirectorySettings {
  const s = provider.settings;
  let groupMapping: GroupMapping[] = [];
  try {
    groupMapping = parseGroupMapping(s.group_mapping ?? '');
  } catch {
    // Checked when saved; a mapping that no longer reads maps nothing.
  }
  return {
    url: s.url ?? '',
    caCertificate: s.ca_certificate ?? '',
    userBase: s.user_base ?? '',
    userFilter: s.user_filter || `(uid=${USERNAME_PLACEHOLDER})`,
    usernameAttribute: s.username_attribute || 'uid',
    emailAttribute: s.email_attribute || 'mail',
    nameAttribute: s.name_attribute || 'cn',
    idAttribute: s.id_attribute || 'entryUUID',
    groupBase: s.group_base ?? '',
    groupFilter: s.group_filter || `(member=${DN_PLACEHOLDER})`,
    groupMapping,
    bindDn: provider.clientId,
    bindPassword: provider.clientSecret,
  };
}

/** Why a directory could not be used, for the page (in general words) and the admin's test (precisely). */
export type UnavailableReason = 'timeout' | 'unreachable' | 'tls' | 'service_bind' | 'error';

export class DirectoryUnavailable extends Error {
  constructor(readonly reason: UnavailableReason, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'DirectoryUnavailable';
  }
}

/** A person found in the directory, read the way the provider's settings say. */
export interface DirectoryEntry {
  dn: string;
  /** The unique ID attribute's value (binary values, such as objectGUID, in hex). '' when the entry has none. */
  subject: string;
  username: string;
  /** Lowercase; '' when the entry has none. */
  email: string;
  name: string;
  /** The entry says its account is disabled or locked, and why. */
  disabled: string | undefined;
  /** The DNs of the groups the entry's `memberOf` names. */
  memberOf: string[];
}

/** The value of an LDAP filter assertion, escaped as RFC 4515 says: `*`, `(`, `)`, `\` and NUL become `\2a`, `\28`, `\29`, `\5c`, `\00`. */
export function escapeFilterValue(value: string): string {
  return Filter.escape(value);
}

/** The provider's filter with its placeholder replaced by the escaped value. */
export function fillFilter(template: string, placeholder: string, value: string): string {
  return template.split(placeholder).join(escapeFilterValue(value));
}

/** A DN in one form for comparing: lowercase, no spaces around `,` and `=`. */
export function normalizeDn(dn: string): string {
  return dn.trim().toLowerCase().replace(/\s*([,=+])\s*/g, '$1');
}

/** The attributes a disabled or locked account is told by: Active Directory, 389/FreeIPA, OpenLDAP's ppolicy. */
const STATE_ATTRIBUTES = ['userAccountControl', 'nsAccountLock', 'pwdAccountLockedTime'];
/** Active Directory's userAccountControl flags: ACCOUNTDISABLE and LOCKOUT. */
const UAC_DISABLED = 0x2;
const UAC_LOCKOUT = 0x10;

function values(entry: Entry, attribute: string): (string | Buffer)[] {
  const key = Object.keys(entry).find((name) => name.toLowerCase() === attribute.toLowerCase());
  if (!key || key === 'dn') return [];
  const value = entry[key] as string | string[] | Buffer | Buffer[];
  return Array.isArray(value) ? value : [value];
}

function text(entry: Entry, attribute: string): string {
  const [first] = values(entry, attribute);
  if (first === undefined) return '';
  return Buffer.isBuffer(first) ? first.toString('hex') : first;
}

/** Why the entry's own attributes say it may not sign in; undefined when nothing does. */
export function disabledBy(entry: Entry): string | undefined {
  const uac = Number.parseInt(text(entry, 'userAccountControl'), 10);
  if (Number.isFinite(uac) && uac & UAC_DISABLED) return 'userAccountControl: disabled';
  if (Number.isFinite(uac) && uac & UAC_LOCKOUT) return 'userAccountControl: locked out';
  if (text(entry, 'nsAccountLock').toLowerCase() === 'true') return 'nsAccountLock';
  if (text(entry, 'pwdAccountLockedTime')) return 'pwdAccountLockedTime';
  return undefined;
}

function entryOf(settings: DirectorySettings, entry: Entry): DirectoryEntry {
  return {
    dn: entry.dn,
    subject: text(entry, settings.idAttribute),
    username: text(entry, settings.usernameAttribute),
    email: text(entry, settings.emailAttribute).trim().toLowerCase(),
    name: text(entry, settings.nameAttribute).trim(),
    disabled: disabledBy(entry),
    memberOf: values(entry, 'memberOf').map((value) => (Buffer.isBuffer(value) ? value.toString('utf8') : value)),
  };
}

const NETWORK_CODES = /^(ECONNREFUSED|ENOTFOUND|ECONNRESET|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH|EPIPE|ETIMEDOUT)$/;

function chain(err: unknown): unknown[] {
  const all: unknown[] = [];
  for (let e: unknown = err; e && all.length < 6; e = (e as { cause?: unknown }).cause) all.push(e);
  return all;
}

/** An error met while talking to the directory, as why it could not be used. */
export function unavailableOf(err: unknown, name: string): DirectoryUnavailable {
  if (err instanceof DirectoryUnavailable) return err;
  const errors = chain(err);
  const code = errors.map((e) => (e as { code?: unknown }).code).find((c): c is string => typeof c === 'string');
  const message = errors.map((e) => (e instanceof Error ? e.message : '')).join(' ');
  if (/timeout|timed out/i.test(message) || code === 'ETIMEDOUT') return new DirectoryUnavailable('timeout', `${name} did not answer within ${DIRECTORY_TIMEOUT_MS / 1000} s.`, { cause: err });
  if (code && (/CERT|SELF_SIGNED|ALTNAME|UNABLE_TO_VERIFY|ERR_TLS|ERR_SSL/.test(code))) {
    return new DirectoryUnavailable('tls', `${name}'s certificate is not trusted (${code}): check the CA certificate and the host name in the URL.`, { cause: err });
  }
  if ((code && NETWORK_CODES.test(code)) || /socket|closed|connect/i.test(message)) return new DirectoryUnavailable('unreachable', `${name} could not be reached.`, { cause: err });
  return new DirectoryUnavailable('error', `${name} answered with an error: ${message.slice(0, 200)}`, { cause: err });
}

/** `promise`, or a timeout after `ms` (then `onLate` closes what was opened). */
async function deadline<T>(promise: Promise<T>, ms: number, onLate: () => void): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      onLate();
      reject(Object.assign(new Error('timeout'), { code: 'ETIMEDOUT' }));
    }, ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

function tlsOptions(settings: DirectorySettings): ConnectionOptions {
  const host = new URL(settings.url).hostname.replace(/^\[|\]$/g, '');
  return { ...(settings.caCertificate ? { ca: [settings.caCertificate] } : {}), servername: /^[0-9.:]+$/.test(host) ? undefined : host, minVersion: 'TLSv1.2' };
}

/** A connection with TLS up (ldaps, or StartTLS on ldap), not bound yet. */
async function connect(settings: DirectorySettings): Promise<Client> {
  const startTls = settings.url.startsWith('ldap:');
  // TLS options given to the client make ldapts open TLS at once: for ldap:// they go to StartTLS only.
  const client = new Client({ url: settings.url, timeout: DIRECTORY_TIMEOUT_MS, connectTimeout: DIRECTORY_TIMEOUT_MS, ...(startTls ? {} : { tlsOptions: tlsOptions(settings) }), strictDN: false });
  if (startTls) await client.startTLS(tlsOptions(settings));
  return client;
}

async function closeQuietly(client: Client): Promise<void> {
  await client.unbind().catch(() => undefined);
}

/** A fresh connection bound as the service account; DirectoryUnavailable when that fails. */
async function serviceConnection(settings: DirectorySettings, name: string): Promise<Client> {
  let client: Client | undefined;
  const opening = (async () => {
    client = await connect(settings);
    try {
      await client.bind(settings.bindDn, settings.bindPassword);
    } catch (err) {
      if (err instanceof InvalidCredentialsError) throw new DirectoryUnavailable('service_bind', `${name} refused the service account's DN and password.`, { cause: err });
      throw err;
    }
    return client;
  })();
  try {
    return await deadline(opening, DIRECTORY_TIMEOUT_MS, () => void (client && closeQuietly(client)));
  } catch (err) {
    if (client) await closeQuietly(client);
    throw unavailableOf(err, name);
  }
}

/**
 * One directory, as its provider's row is now: a pool of service connections. The person's own
 * bind runs on a connection of its own, so that a pooled one is never left bound as someone else.
 */
export class Directory {
  private readonly pool: Pool<Client>;

  constructor(readonly name: string, readonly settings: DirectorySettings) {
    this.pool = new Pool<Client>({
      create: () => serviceConnection(settings, name),
      destroy: (client) => closeQuietly(client),
      validate: (client) => client.isConnected,
      min: 0,
      max: POOL_SIZE,
      acquireTimeoutMillis: DIRECTORY_TIMEOUT_MS * 2,
      createTimeoutMillis: DIRECTORY_TIMEOUT_MS * 2,
      idleTimeoutMillis: IDLE_MS,
      propagateCreateError: true,
    });
  }

  /** Runs `work` on a service connection; one that failed is closed rather than kept. */
  private async withService<T>(work: (client: Client) => Promise<T>): Promise<T> {
    let client: Client;
    try {
      client = await this.pool.acquire().promise;
    } catch (err) {
      throw unavailableOf(err, this.name);
    }
    try {
      const result = await work(client);
      this.pool.release(client);
      return result;
    } catch (err) {
      // A connection that failed is closed; the pool's check (isConnected) then drops it.
      await closeQuietly(client);
      this.pool.release(client);
      throw err;
    }
  }

  private userAttributes(): string[] {
    const s = this.settings;
    return [...new Set([s.idAttribute, s.usernameAttribute, s.emailAttribute, s.nameAttribute, 'memberOf', ...STATE_ATTRIBUTES])];
  }

  /**
   * The one person the user filter finds for a typed username; undefined when it finds none, or
   * more than one (a filter that matches several people signs none of them in).
   */
  async findUser(username: string): Promise<DirectoryEntry | undefined> {
    return this.searchOne(fillFilter(this.settings.userFilter, USERNAME_PLACEHOLDER, username));
  }

  /**
   * The person of a linked identity, by their unique ID (a rename does not lose them), and only
   * while the user filter still finds them by their current username (a filter that narrows who
   * may sign in narrows who stays).
   */
  async findBySubject(subject: string): Promise<DirectoryEntry | undefined> {
    if (!subject) return undefined;
    const { idAttribute } = this.settings;
    // A binary ID (Active Directory's objectGUID) is kept in hex: each byte escaped in the filter.
    const value = /^objectGUID$/i.test(idAttribute) && /^(?:[0-9a-f]{2})+$/i.test(subject) ? subject.replace(/../g, (byte) => `\\${byte}`) : escapeFilterValue(subject);
    const byId = await this.searchOne(`(${idAttribute}=${value})`);
    if (!byId) return undefined;
    const current = await this.findUser(byId.username);
    return current && current.subject === subject ? current : undefined;
  }

  private async searchOne(filter: string): Promise<DirectoryEntry | undefined> {
    return this.withService(async (client) => {
      try {
        const { searchEntries } = await client.search(this.settings.userBase, {
          scope: 'sub',
          filter,
          attributes: this.userAttributes(),
          sizeLimit: 2,
          timeLimit: DIRECTORY_TIMEOUT_MS / 1000,
          explicitBufferAttributes: /^objectGUID$/i.test(this.settings.idAttribute) ? [this.settings.idAttribute] : [],
        });
        return searchEntries.length === 1 ? entryOf(this.settings, searchEntries[0]!) : undefined;
      } catch (err) {
        if (err instanceof SizeLimitExceededError) return undefined;
        throw unavailableOf(err, this.name);
      }
    });
  }

  /** The DNs of the person's groups: their `memberOf`, and what the group filter finds under the group base. */
  async groupsOf(entry: DirectoryEntry): Promise<string[]> {
    const found = new Set(entry.memberOf.map(normalizeDn));
    if (this.settings.groupBase) {
      const filter = fillFilter(fillFilter(this.settings.groupFilter, DN_PLACEHOLDER, entry.dn), USERNAME_PLACEHOLDER, entry.username);
      await this.withService(async (client) => {
        try {
          const { searchEntries } = await client.search(this.settings.groupBase, { scope: 'sub', filter, attributes: ['1.1'], sizeLimit: 1000, timeLimit: DIRECTORY_TIMEOUT_MS / 1000 });
          for (const group of searchEntries) found.add(normalizeDn(group.dn));
        } catch (err) {
          throw unavailableOf(err, this.name);
        }
      });
    }
    return [...found];
  }

  /**
   * Whether `password` is the person's: a bind as their DN on a connection of its own. An empty
   * password is never sent (LDAP takes a DN with no password as an anonymous bind, which succeeds).
   */
  async checkPassword(dn: string, password: string): Promise<boolean> {
    if (!password) return false;
    let client: Client | undefined;
    const binding = (async () => {
      client = await connect(this.settings);
      try {
        await client.bind(dn, password);
        return true;
      } catch (err) {
        if (err instanceof InvalidCredentialsError) return false;
        throw err;
      }
    })();
    try {
      return await deadline(binding, DIRECTORY_TIMEOUT_MS, () => void (client && closeQuietly(client)));
    } catch (err) {
      throw unavailableOf(err, this.name);
    } finally {
      if (client) await closeQuietly(client);
    }
  }

  /** Whether the user search base exists, as the service account sees it (Test connection). */
  async userBaseExists(): Promise<boolean> {
    return this.withService(async (client) => {
      try {
        const { searchEntries } = await client.search(this.settings.userBase, { scope: 'base', filter: '(objectClass=*)', attributes: ['1.1'], timeLimit: DIRECTORY_TIMEOUT_MS / 1000 });
        return searchEntries.length === 1;
      } catch (err) {
        if ((err as { code?: unknown }).code === 32) return false; // noSuchObject
        throw unavailableOf(err, this.name);
      }
    });
  }

  /** Closes every connection (a changed or removed provider, or shutting down). */
  async close(): Promise<void> {
    await this.pool.destroy().catch(() => undefined);
  }
}

/** The directories in use, one per provider row version: a changed row gets a new pool, the old one is closed. */
export class Directories {
  private readonly open = new Map<number, { version: string; directory: Directory }>();

  of(provider: UpstreamProvider): Directory {
    // What the connections are made with: a saved change, however soon after the last, gets new ones.
    const { row } = provider;
    const version = JSON.stringify([row.settings, row.client_id, row.client_secret, toIso(row.updated_at)]);
    const current = this.open.get(provider.id);
    if (current && current.version === version) return current.directory;
    if (current) void current.directory.close();
    const directory = new Directory(provider.name, directorySettingsOf(provider));
    this.open.set(provider.id, { version, directory });
    return directory;
  }

  async close(): Promise<void> {
    const all = [...this.open.values()];
    this.open.clear();
    await Promise.all(all.map(({ directory }) => directory.close()));
  }
}
