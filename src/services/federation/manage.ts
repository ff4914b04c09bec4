import { domainToASCII } from 'node:url';
import type { Knex } from 'knex';
import { recordAudit, type AuditAction } from '../../db/audit.js';
import { releaseManagedMemberships } from '../../db/groups.js';
import {
  countAccountsOnlyThrough,
  countProviderIdentities,
  deleteSignInProvider,
  findSignInProvider,
  identityCountsByProvider,
  insertSignInProvider,
  lastSignInProviderPosition,
  listSignInProviders,
  updateSignInProvider,
  type SignInProviderFields,
  type SignInProviderRow,
} from '../../db/sign-in-providers.js';
import { hasControlCharacter } from '../../control-characters.js';
import { ConflictError, NotFoundError, ValidationError, type FieldProblem } from '../../errors.js';
import type { KeyCipher } from '../../key-encryption.js';
import { now } from '../../time.js';
import { auditActorId, changedFields, type Actor } from '../context.js';
import { NO_PASSWORD_PREFIX } from '../passwords.js';
import { kindOf, upstreamKinds } from './kinds.js';
import { parseDn } from './ldap.js';
import { sealClientSecret } from './providers.js';
import type { ProviderKind } from './upstream.js';

/**
 * Managing sign-in providers (Admin → Sign-in providers and `idp provider …`): adding, editing,
 * disabling, enabling and removing them. Generic over the registered kinds: each kind's own
 * settings (issuer URL, base URL, tenant) are checked by the kind. Every change is recorded in the
 * site's audit trail in the transaction that makes it, never with the client secret.
 */

/** A provider as typed into the form or on the command line; on update, a field left out stays as it is. */
export interface ProviderInput {
  kind?: string;
  slug?: string;
  name?: string;
  client_id?: string;
  /** Required on create; on update, empty or left out keeps the current one. */
  client_secret?: string;
  /** Space-separated; empty: the kind's default scopes. */
  scopes?: string;
  /** The kind's settings by name; on update, a setting left out stays as it is. */
  settings?: Record<string, string | undefined>;
  allow_sign_up?: boolean;
  /** Space- or comma-separated e-mail domains; empty allows any. */
  allowed_domains?: string;
  trust_mfa?: boolean;
  position?: string | number;
}

/** What managing needs: the database, and KEYS_SECRET's cipher to seal client secrets with. */
export interface ManageDeps {
  db: Knex;
  cipher: KeyCipher | undefined;
}

/** Slugs that would read as something else in an address (`/admin/providers/new`). */
export const RESERVED_SLUGS: ReadonlySet<string> = new Set([
  'new', 'add', 'edit', 'remove', 'delete', 'disable', 'enable', 'list', 'callback', 'upstream', 'login', 'logout',
  'local', 'password', 'passkey', 'passkeys', 'admin', 'api', 'settings', 'none', 'null', 'undefined',
]);

const SLUG = /^[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?$/;
/** A scope token as RFC 6749 §3.3 defines it: printable ASCII but space, `"` and `\`. */
const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]+$/;
const PRINTABLE = /^[\x20-\x7E]+$/;
const DOMAIN_LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
const MAX_SCOPES_LENGTH = 500;
const MAX_DOMAINS_LENGTH = 1000;
const MAX_SECRET_LENGTH = 2000;
const MAX_POSITION = 9999;

/** The kinds an administrator can pick, in the order they were registered. */
export function availableKinds(): ProviderKind[] {
  return Object.values(upstreamKinds);
}

/** Collects every bad field of one submission, so that a form shows them all at once. */
class Problems {
  readonly list: FieldProblem[] = [];

  add(field: string, problem: string): void {
    if (!this.list.some((p) => p.field === field)) this.list.push({ field, problem, message: `${field} ${problem}` });
  }

  /** A problem in the checker's own words (a kind's setting), shown as it is. */
  addMessage(field: string, message: string): void {
    if (!this.list.some((p) => p.field === field)) this.list.push({ field, message });
  }

  throwIfAny(): void {
    const [first] = this.list;
    if (first) throw new ValidationError(first.field, first.message, this.list);
  }
}

function checkSlug(problems: Problems, raw: string | undefined): string {
  const slug = (raw ?? '').trim();
  if (!slug) problems.add('slug', 'is required');
  else if (!SLUG.test(slug)) problems.add('slug', 'must be 2 to 40 characters: lowercase letters a–z, digits and -, starting and ending with a letter or digit');
  else if (slug.length < 2) problems.add('slug', 'must be at least 2 characters');
  else if (RESERVED_SLUGS.has(slug)) problems.add('slug', `"${slug}" is reserved; choose another`);
  return slug;
}

function checkName(problems: Problems, raw: string | undefined): string {
  const name = (raw ?? '').trim();
  if (!name) problems.add('name', 'is required');
  else if ([...name].length > 60) problems.add('name', 'must be at most 60 characters');
  else if (hasControlCharacter(name)) problems.add('name', 'must not contain control characters');
  return name;
}

/** A directory's `client_id` is its service account's DN, which may hold any character but control ones. */
function checkBindDn(problems: Problems, raw: string | undefined): string {
  try {
    return parseDn(raw ?? '', 'client_id');
  } catch (err) {
    problems.add('client_id', (err as Error).message.replace(/^client_id /, ''));
    return '';
  }
}

function checkClientId(problems: Problems, raw: string | undefined, kind?: ProviderKind): string {
  if (kind?.signIn === 'directory') return checkBindDn(problems, raw);
  const clientId = (raw ?? '').trim();
  if (!clientId) problems.add('client_id', 'is required');
  else if (clientId.length > 255) problems.add('client_id', 'must be at most 255 characters');
  else if (!PRINTABLE.test(clientId)) problems.add('client_id', 'must be printable ASCII characters');
  return clientId;
}

/** The secret to keep; undefined when none was typed (on update, the current one stays). */
function checkClientSecret(problems: Problems, raw: string | undefined, required: boolean, kind?: ProviderKind): string | undefined {
  // A directory password is kept as typed (spaces are characters of it); a client secret is trimmed.
  const secret = kind?.signIn === 'directory' ? (raw ?? '') : (raw ?? '').trim();
  if (!secret) {
    if (required) problems.add('client_secret', 'is required');
    return undefined;
  }
  // Never echoed back in a message: only its shape is described.
  if (secret.length > MAX_SECRET_LENGTH) problems.add('client_secret', `must be at most ${MAX_SECRET_LENGTH} characters`);
  else if (kind?.signIn === 'directory' ? hasControlCharacter(secret) : !PRINTABLE.test(secret)) problems.add('client_secret', kind?.signIn === 'directory' ? 'must not contain control characters' : 'must be printable ASCII characters');
  return secret;
}

function checkScopes(problems: Problems, raw: string | undefined, kind: ProviderKind | undefined): string {
  const scopes = [...new Set((raw ?? '').split(/[\s,]+/).filter(Boolean))];
  const bad = scopes.find((scope) => !SCOPE_TOKEN.test(scope));
  if (bad !== undefined) {
    problems.add('scopes', `must be scope names separated by spaces; ${JSON.stringify(bad)} is not one`);
    return '';
  }
  const chosen = scopes.length ? scopes : (kind?.defaultScopes ?? []);
  const joined = chosen.join(' ');
  if (joined.length > MAX_SCOPES_LENGTH) problems.add('scopes', `must be at most ${MAX_SCOPES_LENGTH} characters in all`);
  return joined;
}

/** An e-mail domain in its stored form: lowercase, IDNs as punycode; undefined when it is not a domain. */
export function normalizeDomain(raw: string): string | undefined {
  const typed = raw.trim().replace(/^@/, '').replace(/\.$/, '');
  if (!typed || hasControlCharacter(typed) || /[\s/@:]/.test(typed)) return undefined;
  const ascii = domainToASCII(typed.toLowerCase());
  if (!ascii || ascii.length > 253) return undefined;
  const labels = ascii.split('.');
  if (labels.length < 2 || !labels.every((label) => DOMAIN_LABEL.test(label)) || /^[0-9]+$/.test(labels.at(-1)!)) return undefined;
  return ascii;
}

function checkDomains(problems: Problems, raw: string | undefined): string {
  const domains: string[] = [];
  for (const typed of (raw ?? '').split(/[\s,;]+/).filter(Boolean)) {
    const domain = normalizeDomain(typed);
    if (!domain) {
      problems.add('allowed_domains', `must be e-mail domains (example.com) separated by spaces or commas; ${JSON.stringify(typed.slice(0, 80))} is not one`);
      return '';
    }
    if (!domains.includes(domain)) domains.push(domain);
  }
  const joined = domains.join(' ');
  if (joined.length > MAX_DOMAINS_LENGTH) problems.add('allowed_domains', `must be at most ${MAX_DOMAINS_LENGTH} characters in all`);
  return joined;
}

function checkPosition(problems: Problems, raw: string | number | undefined, fallback: number): number {
  if (raw === undefined || raw === '') return fallback;
  const text = String(raw).trim();
  if (!/^[0-9]{1,4}$/.test(text)) {
    problems.add('position', `must be a whole number from 0 to ${MAX_POSITION}`);
    return fallback;
  }
  return Number(text);
}

/** The kind's settings, each checked by the kind; `current` supplies those left out (on update). */
function checkSettings(problems: Problems, kind: ProviderKind, given: Record<string, string | undefined> = {}, current: Record<string, string> = {}): Record<string, string> {
  const settings: Record<string, string> = {};
  for (const setting of kind.settings) {
    const typed = Object.hasOwn(given, setting.name) && given[setting.name] !== undefined ? given[setting.name]!.trim() : current[setting.name];
    if (typed === undefined || typed === '') {
      if (setting.required) problems.add(setting.name, 'is required');
      continue;
    }
    try {
      settings[setting.name] = setting.parse(typed);
    } catch (err) {
      problems.addMessage(setting.name, err instanceof Error && err.message ? err.message : `${setting.name} is not valid`);
    }
  }
  return settings;
}

function storedSettings(row: SignInProviderRow): Record<string, string> {
  try {
    const parsed: unknown = JSON.parse(row.settings);
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, string>) : {};
  } catch {
    return {};
  }
}

/** A provider's fields as the audit trail records them: everything but the client secret. */
function audited(fields: Omit<SignInProviderFields, 'client_secret'>): Record<string, unknown> {
  return {
    kind: fields.kind,
    slug: fields.slug,
    name: fields.name,
    client_id: fields.client_id,
    scopes: fields.scopes,
    settings: fields.settings,
    allow_sign_up: Boolean(fields.allow_sign_up),
    allowed_domains: fields.allowed_domains,
    trust_mfa: Boolean(fields.trust_mfa),
    position: fields.position,
  };
}

function recordProviderAudit(db: Knex, actor: Actor, action: AuditAction, slug: string, details: Record<string, unknown>, at: string): Promise<void> {
  return recordAudit(db, {
    groupId: null,
    actorId: auditActorId(actor),
    action,
    target: slug,
    details: actor.admin ? { ...details, via: 'cli' } : details,
    ip: actor.ip,
  }, at);
}

/** A provider by slug; 404 when there is none. */
export async function requireProvider(db: Knex, slug: string): Promise<SignInProviderRow> {
  const row = typeof slug === 'string' && SLUG.test(slug) ? await findSignInProvider(db, slug) : undefined;
  if (!row) throw new NotFoundError('There is no such sign-in provider.');
  return row;
}

/** Every provider in sign-in page order, with how many identities are linked through each. */
export async function listProviders(db: Knex): Promise<{ row: SignInProviderRow; identities: number }[]> {
  const [rows, counts] = await Promise.all([listSignInProviders(db), identityCountsByProvider(db)]);
  return rows.map((row) => ({ row, identities: counts.get(Number(row.id)) ?? 0 }));
}

/**
 * Adds a provider, disabled or not as given (enabled by default). Every bad field is reported at
 * once; a slug in use (also when two administrators add the same one at the same moment) is a
 * 409 naming the slug field.
 */
export async function createProvider(deps: ManageDeps, actor: Actor, input: ProviderInput): Promise<SignInProviderRow> {
  const problems = new Problems();
  const kind = kindOf((input.kind ?? '').trim());
  if (!kind) {
    const known = availableKinds().map((k) => k.kind);
    problems.add('kind', known.length ? `must be one of ${known.join(', ')}` : 'must be a registered kind, and none is registered');
  }
  const slug = checkSlug(problems, input.slug);
  const name = checkName(problems, input.name);
  const clientId = checkClientId(problems, input.client_id, kind);
  const secret = checkClientSecret(problems, input.client_secret, true, kind);
  // A directory is asked for no scopes, and has no second factor of its own to trust.
  const directory = kind?.signIn === 'directory';
  const scopes = directory ? '' : checkScopes(problems, input.scopes, kind);
  const settings = kind ? checkSettings(problems, kind, input.settings) : {};
  const allowedDomains = checkDomains(problems, input.allowed_domains);
  const position = checkPosition(problems, input.position, (await lastSignInProviderPosition(deps.db)) + 1);
  problems.throwIfAny();

  const fields: SignInProviderFields = {
    slug,
    kind: kind!.kind,
    name,
    client_id: clientId,
    client_secret: sealClientSecret(deps.cipher, secret!),
    scopes,
    settings: JSON.stringify(settings),
    allow_sign_up: Boolean(input.allow_sign_up),
    allowed_domains: allowedDomains,
    trust_mfa: !directory && Boolean(input.trust_mfa),
    position,
  };
  const created = await deps.db.transaction(async (trx) => {
    const at = now();
    const row = await insertSignInProvider(trx, fields, at);
    if (row) await recordProviderAudit(trx, actor, 'sign-in_provider.add', slug, audited(fields), at);
    return row;
  }).catch(async (err: unknown) => {
    // Two adds of one slug at once: the unique index refuses the later one outright on some stores.
    if (await findSignInProvider(deps.db, slug)) return undefined;
    throw err;
  });
  if (!created) throw new ConflictError('slug', `slug "${slug}" is taken by another sign-in provider`);
  return created;
}

/**
 * Changes a provider. Its kind stays (a provider of another kind is another provider); a client
 * secret left empty keeps the current one. Returns the row and whether anything changed.
 */
export async function updateProvider(deps: ManageDeps, actor: Actor, row: SignInProviderRow, input: ProviderInput): Promise<{ row: SignInProviderRow; changed: boolean }> {
  const problems = new Problems();
  const kind = kindOf(row.kind);
  if (input.kind !== undefined && input.kind.trim() !== '' && input.kind.trim() !== row.kind) {
    problems.add('kind', 'cannot be changed: add a new provider of the other kind instead');
  }
  const slug = input.slug === undefined ? row.slug : checkSlug(problems, input.slug);
  const name = input.name === undefined ? row.name : checkName(problems, input.name);
  const clientId = input.client_id === undefined ? row.client_id : checkClientId(problems, input.client_id, kind);
  const secret = checkClientSecret(problems, input.client_secret, false, kind);
  const directory = kind?.signIn === 'directory';
  const scopes = input.scopes === undefined || directory ? row.scopes : checkScopes(problems, input.scopes, kind);
  // A provider whose kind is no longer registered keeps its settings as they are.
  const settings = kind ? checkSettings(problems, kind, input.settings, storedSettings(row)) : storedSettings(row);
  const allowedDomains = input.allowed_domains === undefined ? row.allowed_domains : checkDomains(problems, input.allowed_domains);
  const position = checkPosition(problems, input.position, row.position);
  problems.throwIfAny();

  const before = audited(row);
  const after = audited({
    ...row,
    slug,
    name,
    client_id: clientId,
    scopes,
    settings: JSON.stringify(settings),
    allow_sign_up: input.allow_sign_up ?? Boolean(row.allow_sign_up),
    allowed_domains: allowedDomains,
    trust_mfa: !directory && (input.trust_mfa ?? Boolean(row.trust_mfa)),
    position,
  });
  const changes = changedFields(before, after);
  if (!Object.keys(changes).length && secret === undefined) return { row, changed: false };

  const fields: Partial<SignInProviderFields> = {
    slug,
    name,
    client_id: clientId,
    scopes,
    settings: JSON.stringify(settings),
    allow_sign_up: Boolean(after.allow_sign_up),
    allowed_domains: allowedDomains,
    trust_mfa: Boolean(after.trust_mfa),
    position,
    ...(secret === undefined ? {} : { client_secret: sealClientSecret(deps.cipher, secret) }),
  };
  const updated = await deps.db.transaction(async (trx) => {
    const at = now();
    const changedRow = await updateSignInProvider(trx, row.id, fields, at);
    if (!changedRow) throw new NotFoundError('There is no such sign-in provider.');
    await recordProviderAudit(trx, actor, 'sign-in_provider.update', row.slug, {
      changes,
      ...(secret === undefined ? {} : { client_secret: 'replaced' }),
    }, at);
    return changedRow;
  }).catch(async (err: unknown) => {
    if (slug !== row.slug && (await findSignInProvider(deps.db, slug))) throw new ConflictError('slug', `slug "${slug}" is taken by another sign-in provider`);
    throw err;
  });
  return { row: updated, changed: true };
}

/**
 * Disables or enables a provider. A disabled one is no longer offered on the sign-in pages and its
 * callbacks are refused, while its linked identities stay for when it is enabled again. False when
 * it already was so.
 */
export async function setProviderDisabled(db: Knex, actor: Actor, row: SignInProviderRow, disabled: boolean): Promise<boolean> {
  if ((row.disabled_at !== null) === disabled) return false;
  return db.transaction(async (trx) => {
    const at = now();
    const current = await findSignInProvider(trx, row.slug);
    if (!current || (current.disabled_at !== null) === disabled) return false;
    await updateSignInProvider(trx, row.id, { disabled_at: disabled ? at : null }, at);
    await recordProviderAudit(trx, actor, disabled ? 'sign-in_provider.disable' : 'sign-in_provider.enable', row.slug, {}, at);
    return true;
  });
}

/** What removing a provider takes with it. */
export interface RemovalImpact {
  /** Identities linked through it: all are unlinked. */
  identities: number;
  /** Accounts with no password, passkey or other provider: they need a password reset to sign in again. */
  onlyThroughIt: number;
}

export async function removalImpact(db: Knex, row: SignInProviderRow): Promise<RemovalImpact> {
  const [identities, onlyThroughIt] = await Promise.all([
    countProviderIdentities(db, row.id),
    countAccountsOnlyThrough(db, row.id, NO_PASSWORD_PREFIX),
  ]);
  return { identities, onlyThroughIt };
}

/** Removes a provider and every identity linked through it; what went with it. */
export async function removeProvider(db: Knex, actor: Actor, row: SignInProviderRow): Promise<RemovalImpact> {
  return db.transaction(async (trx) => {
    const impact = await removalImpact(trx, row);
    if (!(await deleteSignInProvider(trx, row.id))) throw new NotFoundError('There is no such sign-in provider.');
    // Memberships a directory's group mapping gave stay, as memberships no provider manages.
    await releaseManagedMemberships(trx, row.id);
    await recordProviderAudit(trx, actor, 'sign-in_provider.remove', row.slug, {
      kind: row.kind,
      name: row.name,
      identities_unlinked: impact.identities,
      accounts_left_without_sign_in: impact.onlyThroughIt,
    }, now());
    return impact;
  });
}

/** A provider's callback URL, to register with the upstream. */
export function callbackUrl(issuer: string, slug: string): string {
  return `${issuer.replace(/\/+$/, '')}/login/callback/${slug}`;
}
