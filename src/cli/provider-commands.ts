import { readFileSync, statSync } from 'node:fs';
import { keyCipher } from '../key-encryption.js';
import { ConflictError, ValidationError } from '../errors.js';
import { hasControlCharacter } from '../control-characters.js';
import type { SignInProviderRow } from '../db/sign-in-providers.js';
import { createLogger } from '../log.js';
import { noMetrics } from '../metrics.js';
import { presentSignInProvider } from '../presenters/sign-in-provider.js';
import type { Actor } from '../services/context.js';
import type { CheckResult } from '../services/directory/check.js';
import { filterSent, testConnection, testUser, type UserTest } from '../services/directory/probe.js';
import { directoryKindOf, kindOf } from '../services/federation/kinds.js';
import { openProvider } from '../services/federation/providers.js';
import { MAX_LOGIN_LENGTH } from '../services/rules.js';
import type { ProviderKind } from '../services/federation/upstream.js';
import {
  availableKinds,
  callbackUrl,
  createProvider,
  listProviders,
  removeProvider,
  requireProvider,
  setProviderDisabled,
  updateProvider,
  type ManageDeps,
  type ProviderInput,
} from '../services/federation/manage.js';
import type { Command, CommandContext, CommandResult } from './commands.js';
import { EXIT_FAULT, UsageError } from './errors.js';
import type { Flags } from './flags.js';
import { readFirstLine } from './stdin.js';

/**
 * `idp provider add | list | update | disable | enable | remove | test | check`: sign-in
 * providers from the command line, through the same service as Admin → Sign-in providers. Each
 * kind's own settings (issuer URL, base URL, tenant, a directory's URL and search bases) are flags
 * of their own name, `--issuer`, whatever kinds this build registers. The client secret (a
 * directory's service account password) is best piped on standard input (--client-secret-stdin):
 * a secret on the command line is visible to other users and kept in shell history. `test` and
 * `check` ask a directory (LDAP) what its provider page's Test connection, Test a user and Check
 * linked accounts now ask.
 */

/** The CLI's changes are recorded in the audit trail with no user and `via: cli`. */
const ADMIN: Actor = { userId: 0, ip: null, admin: true };

const COMMON_STRINGS = ['slug', 'name', 'client-id', 'client-secret', 'scopes', 'allowed-domains', 'position'] as const;
/** A directory's CA certificate read from a PEM file, instead of given whole as --ca-certificate. */
const CA_FILE_FLAG = 'ca-certificate-file';
/** The largest CA file read: a PEM bundle of several certificates, far more than the setting keeps. */
const MAX_CA_FILE_BYTES = 1024 * 1024;
const SWITCHES = ['allow-sign-up', 'trust-mfa'] as const;

/** The service's field each common flag fills, so that an error names the flag typed. */
const FLAG_OF_FIELD: Record<string, string> = {
  kind: '--kind',
  slug: '--slug',
  name: '--name',
  client_id: '--client-id',
  client_secret: '--client-secret-stdin',
  scopes: '--scopes',
  allowed_domains: '--allowed-domains',
  position: '--position',
};

/** A kind's setting as a flag: `base_url` is `--base-url`. */
const flagOf = (setting: string) => setting.replace(/_/g, '-');

/** Every kind's settings as flag names (one a common flag uses already is not repeated). */
function settingFlags(): string[] {
  const names = new Set<string>();
  for (const kind of availableKinds()) for (const setting of kind.settings) names.add(flagOf(setting.name));
  return [...names].filter((name) => !(COMMON_STRINGS as readonly string[]).includes(name) && name !== 'kind');
}

function manageDeps(ctx: CommandContext): ManageDeps {
  return { db: ctx.db, cipher: ctx.keysSecret ? keyCipher(ctx.keysSecret) : undefined };
}

/** `--x` and `--no-x`: true, false, or undefined when neither was given; both is refused. */
function switchFlag(flags: Flags, name: string): boolean | undefined {
  if (flags.has(name) && flags.has(`no-${name}`)) throw new UsageError(`--${name} and --no-${name}: give one of them`);
  return flags.has(name) ? true : flags.has(`no-${name}`) ? false : undefined;
}

/** What the client secret is to a person, for a kind: a directory's is its service account's password. */
const secretWords = (kind: ProviderKind | undefined) => (kind?.signIn === 'directory' ? "the service account's password" : 'the client secret');

/** The client secret: from standard input (preferred) or --client-secret; undefined when neither. */
async function clientSecret(ctx: CommandContext, kind: ProviderKind | undefined): Promise<string | undefined> {
  const { flags } = ctx;
  const typed = flags.string('client-secret');
  if (flags.has('client-secret-stdin')) {
    if (typed !== undefined) throw new UsageError('--client-secret and --client-secret-stdin: give one of them (standard input is preferred)');
    const secret = await readFirstLine(ctx.stdin);
    if (!secret.trim()) throw new UsageError(`--client-secret-stdin: standard input is empty; pipe ${secretWords(kind)} in`);
    return secret;
  }
  return typed;
}

/** `--ca-certificate-file`: the PEM file's text as the kind's CA certificate; undefined when not given. */
function caCertificateFile(ctx: CommandContext, kind: ProviderKind | undefined): string | undefined {
  const path = ctx.flags.string(CA_FILE_FLAG);
  if (path === undefined) return undefined;
  if (ctx.flags.string('ca-certificate') !== undefined) throw new UsageError(`--ca-certificate and --${CA_FILE_FLAG}: give one of them`);
  if (kind && !kind.settings.some((s) => s.name === 'ca_certificate')) throw new UsageError(`--${CA_FILE_FLAG}: ${kind.label} providers take no CA certificate`);
  try {
    if (statSync(path).size > MAX_CA_FILE_BYTES) throw new UsageError(`--${CA_FILE_FLAG}: ${path} is over ${MAX_CA_FILE_BYTES / 1024} KiB; give the PEM file of the CA certificate alone`);
    return readFileSync(path, 'utf8');
  } catch (err) {
    if (err instanceof UsageError) throw err;
    throw new UsageError(`--${CA_FILE_FLAG}: ${path} could not be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
}

/** What the flags say about a provider; a flag left out is left out of the input. */
async function inputOf(ctx: CommandContext, kindName: string | undefined): Promise<ProviderInput> {
  const { flags } = ctx;
  const kind = kindName === undefined ? undefined : kindOf(kindName);
  const settings: Record<string, string | undefined> = {};
  for (const flag of settingFlags()) {
    const value = flags.string(flag);
    if (value === undefined) continue;
    const setting = kind?.settings.find((s) => flagOf(s.name) === flag);
    if (kind && !setting) {
      throw new UsageError(`--${flag}: not a setting of ${kind.label} providers${kind.settings.length ? ` (they take ${kind.settings.map((s) => `--${flagOf(s.name)}`).join(', ')})` : ''}`);
    }
    settings[setting?.name ?? flag] = value;
  }
  const ca = caCertificateFile(ctx, kind);
  if (ca !== undefined) settings.ca_certificate = ca;
  if (kind?.signIn === 'directory') {
    // A directory is asked for no scopes and has no second factor of its own: refused rather than ignored.
    for (const flag of ['scopes', 'trust-mfa'] as const) {
      if (flags.string(flag) !== undefined || flags.has(flag)) throw new UsageError(`--${flag}: a directory (${kind.label}) provider has ${flag === 'scopes' ? 'no scopes' : 'no two-factor of its own to trust'}`);
    }
  }
  return {
    kind: kindName,
    slug: flags.string('slug'),
    name: flags.string('name'),
    client_id: flags.string('client-id'),
    client_secret: await clientSecret(ctx, kind),
    scopes: flags.string('scopes'),
    settings,
    allow_sign_up: switchFlag(flags, 'allow-sign-up'),
    allowed_domains: flags.string('allowed-domains'),
    trust_mfa: switchFlag(flags, 'trust-mfa'),
    position: flags.string('position'),
  };
}

/** A service's refusal of fields, naming the flags typed: `--slug must be …; --issuer: …`. */
function namingFlags(err: unknown, secretFlag: string, caFromFile = false): unknown {
  if (!(err instanceof ValidationError || err instanceof ConflictError)) return err;
  const lines = err.problems.map((problem) => {
    const flag = problem.field === 'client_secret' ? secretFlag
      : problem.field === 'ca_certificate' && caFromFile ? `--${CA_FILE_FLAG}`
        : (FLAG_OF_FIELD[problem.field] ?? `--${flagOf(problem.field)}`);
    return problem.problem ? `${flag} ${problem.problem}` : `${flag}: ${problem.message}`;
  });
  return new UsageError(lines.join('; '));
}

/** A provider as the commands print it; a directory has no callback URL (null). */
function describe(ctx: CommandContext, row: Parameters<typeof presentSignInProvider>[0], identities = 0) {
  const provider = presentSignInProvider(row, identities);
  return { ...provider, callbackURL: directoryKindOf(provider.kind) ? null : callbackUrl(ctx.config.issuer, provider.slug) };
}

/** One line of a summary: its label padded to one column. */
const line = (label: string, value: string) => `${`${label}:`.padEnd(24)}${value}`;

function summary(provider: ReturnType<typeof describe>): string[] {
  const kind = kindOf(provider.kind);
  const directory = kind?.signIn === 'directory';
  // A setting of several lines (a CA certificate, a group mapping) is shown under its label, indented.
  const setting = (name: string, value: string) => {
    const label = kind?.settings.find((s) => s.name === name)?.label ?? name;
    if (!value.includes('\n')) return [line(label, value)];
    if (name === 'ca_certificate') return [line(label, `${(value.match(/-----BEGIN CERTIFICATE-----/g) ?? []).length} PEM certificate(s)`)];
    return [`${label}:`, ...value.split('\n').map((text) => `  ${text}`)];
  };
  return [
    line('kind', kind?.label ?? provider.kind),
    ...Object.entries(provider.settings).flatMap(([name, value]) => setting(name, value)),
    ...(directory
      ? [line('service account DN', provider.clientId)]
      : [line('client ID', provider.clientId), line('scopes', provider.scopes.join(' ') || '(none)')]),
    line('allow new accounts', provider.allowSignUp ? 'on' : 'off'),
    line('allowed e-mail domains', provider.allowedDomains.join(' ') || 'any'),
    ...(directory ? [] : [line('trust its two-factor', provider.trustMfa ? 'on' : 'off')]),
    line('status', provider.disabled ? 'disabled' : 'enabled'),
    ...(provider.callbackURL ? [line('callback URL', provider.callbackURL)] : []),
  ];
}

async function providerAdd(ctx: CommandContext): Promise<CommandResult> {
  const kindName = ctx.flags.required('kind');
  if (!kindOf(kindName)) {
    const known = availableKinds().map((k) => k.kind);
    throw new UsageError(`--kind must be one of ${known.join(', ') || '(no kind is registered in this build)'}`);
  }
  const kind = kindOf(kindName)!;
  const input = await inputOf(ctx, kindName);
  const secretFlag = ctx.flags.has('client-secret-stdin') ? '--client-secret-stdin' : '--client-secret';
  if (input.client_secret === undefined) throw new UsageError(`--client-secret-stdin is required: pipe ${secretWords(kind)} on standard input (or, for scripts, --client-secret)`);
  // A setting not given takes the kind's default, as the Add form shows it (a directory's user filter, attributes).
  for (const setting of kind.settings) {
    if (setting.defaultValue !== undefined && input.settings?.[setting.name] === undefined) input.settings = { ...input.settings, [setting.name]: setting.defaultValue };
  }
  const row = await createProvider(manageDeps(ctx), ADMIN, input).catch((err: unknown) => {
    throw namingFlags(err, secretFlag, ctx.flags.string(CA_FILE_FLAG) !== undefined);
  });
  const provider = describe(ctx, row);
  const after = kind.signIn === 'directory'
    ? `Test it with: provider test ${provider.slug} --user <username>. The service account's password is stored and will not be shown again.`
    : 'Register the callback URL with the provider. The client secret is stored and will not be shown again.';
  return {
    json: provider,
    text: [`added sign-in provider ${provider.slug} ("${provider.name}")`, ...summary(provider), after].join('\n'),
  };
}

async function providerUpdate(ctx: CommandContext): Promise<CommandResult> {
  const row = await requireProvider(ctx.db, ctx.flags.argument());
  const input = await inputOf(ctx, row.kind);
  const secretFlag = ctx.flags.has('client-secret-stdin') ? '--client-secret-stdin' : '--client-secret';
  const given = Object.entries(input).some(([field, value]) => field !== 'kind' && field !== 'settings' && value !== undefined) || Object.keys(input.settings ?? {}).length > 0;
  if (!given) throw new UsageError('nothing to change: give at least one flag to change (see --help)');
  const { row: saved, changed } = await updateProvider(manageDeps(ctx), ADMIN, row, { ...input, kind: undefined }).catch((err: unknown) => {
    throw namingFlags(err, secretFlag, ctx.flags.string(CA_FILE_FLAG) !== undefined);
  });
  const provider = describe(ctx, saved);
  return {
    json: { ...provider, changed },
    text: [changed ? `updated sign-in provider ${provider.slug}` : `nothing changed on sign-in provider ${provider.slug}`, ...summary(provider)].join('\n'),
  };
}

async function providerList(ctx: CommandContext): Promise<CommandResult> {
  const listed = (await listProviders(ctx.db)).map(({ row, identities }) => describe(ctx, row, identities));
  if (!listed.length) return { json: { providers: [] }, text: 'no sign-in provider yet (add one with: provider add --kind …)' };
  const header = ['SLUG', 'KIND', 'NAME', 'STATUS', 'IDENTITIES', 'CALLBACK URL'];
  const rows = listed.map((p) => [p.slug, p.kind, p.name, p.disabled ? 'disabled' : 'enabled', String(p.identities), p.callbackURL ?? '-']);
  const widths = header.map((_, i) => Math.max(header[i]!.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ');
  return { json: { providers: listed }, text: [line(header), ...rows.map(line)].join('\n') };
}

async function providerSetDisabled(ctx: CommandContext, disabled: boolean): Promise<CommandResult> {
  const row = await requireProvider(ctx.db, ctx.flags.argument());
  const changed = await setProviderDisabled(ctx.db, ADMIN, row, disabled);
  const now = disabled ? 'disabled' : 'enabled';
  return {
    json: { slug: row.slug, disabled, changed },
    text: changed
      ? `${now} sign-in provider ${row.slug}${disabled ? ': no longer offered, sign-ins through it refused; linked identities kept' : ': offered on the sign-in pages again'}`
      : `sign-in provider ${row.slug} was already ${now}`,
  };
}

async function providerRemove(ctx: CommandContext): Promise<CommandResult> {
  const row = await requireProvider(ctx.db, ctx.flags.argument());
  const impact = await removeProvider(ctx.db, ADMIN, row);
  return {
    json: { slug: row.slug, removed: true, identitiesUnlinked: impact.identities, accountsWithoutSignIn: impact.onlyThroughIt },
    text: [
      `removed sign-in provider ${row.slug}; unlinked ${impact.identities} identit${impact.identities === 1 ? 'y' : 'ies'}`,
      ...(impact.onlyThroughIt
        ? [`${impact.onlyThroughIt} account(s) had no other way to sign in: send each a password reset (user reset-password <username>)`]
        : []),
    ].join('\n'),
  };
}

/** The directory provider a `test` or `check` names; a provider of another kind has nothing to ask. */
async function directoryProvider(ctx: CommandContext): Promise<SignInProviderRow> {
  const row = await requireProvider(ctx.db, ctx.flags.argument());
  if (!directoryKindOf(row.kind)) throw new UsageError(`${row.slug} is not a directory (LDAP) provider (its kind: ${kindOf(row.kind)?.label ?? row.kind}): only directories can be tested or checked`);
  return row;
}

/** What `provider test --user` found, as lines for a person. */
function userLines(test: Extract<UserTest, { found: true }>): string[] {
  return [
    line('DN', test.dn),
    line('unique ID', test.subject || '(none: a sign-in would be refused; check --id-attribute)'),
    line('username', test.username || '(none)'),
    line('e-mail', test.email || '(none: no account can be made at a first sign-in)'),
    line('name', test.name || '(none)'),
    line('disabled', test.disabled ? `yes (${test.disabled}): a sign-in would be refused` : 'no'),
    ...(test.groups.length ? ['directory groups:', ...test.groups.map((group) => `  ${group}`)] : [line('directory groups', '(none)')]),
    ...(test.mapped.length ? ['group mapping:', ...test.mapped.map(({ group, role }) => `  ${group}: ${role ?? 'not a member'}`)] : []),
  ];
}

async function providerTest(ctx: CommandContext): Promise<CommandResult> {
  const row = await directoryProvider(ctx);
  const provider = openProvider(row, manageDeps(ctx).cipher);
  const typed = ctx.flags.string('user');
  if (typed === undefined) {
    const result = await testConnection(provider);
    if (!result.ok) return { json: { slug: row.slug, connection: result }, text: `${row.slug}: the directory could not be used (${result.reason}): ${result.message}`, exitCode: EXIT_FAULT };
    const base = provider.settings.user_base ?? '';
    return {
      json: { slug: row.slug, connection: result },
      text: result.userBaseFound
        ? `${row.slug}: connected to ${provider.settings.url} as ${provider.clientId}; the user search base ${base} was found`
        : `${row.slug}: connected to ${provider.settings.url} as ${provider.clientId}, but the user search base ${base} was not found: check it, and that the service account may read it`,
      // A base that is not there finds nobody: as failed a test as a directory that does not answer.
      exitCode: result.userBaseFound ? 0 : EXIT_FAULT,
    };
  }
  const username = typed.trim();
  if (!username) throw new UsageError('--user: a username is required, as people type it on the sign-in page');
  // No longer than the sign-in form takes.
  if (username.length > MAX_LOGIN_LENGTH) throw new UsageError(`--user must be at most ${MAX_LOGIN_LENGTH} characters`);
  if (hasControlCharacter(username)) throw new UsageError('--user must not contain control characters');
  const result = await testUser(provider, username);
  const filter = filterSent(provider, result, username);
  const json = { slug: row.slug, username, filter, user: result };
  if (!result.ok) return { json, text: `${row.slug}: the directory could not be used (${result.reason}): ${result.message}`, exitCode: EXIT_FAULT };
  if (!result.found) {
    return {
      json,
      text: `${row.slug}: nobody found for ${JSON.stringify(username)}: the user filter ${filter} under ${provider.settings.user_base ?? ''} finds nobody, or more than one person (who then cannot sign in)`,
      exitCode: EXIT_FAULT,
    };
  }
  return { json, text: [`${row.slug}: found ${JSON.stringify(username)}; a sign-in would read:`, ...userLines(result), line('filter sent', filter)].join('\n') };
}

async function providerCheck(ctx: CommandContext): Promise<CommandResult> {
  const row = await directoryProvider(ctx);
  const cipher = manageDeps(ctx).cipher;
  const provider = openProvider(row, cipher);
  // Loaded here only, as for user disable: oidc-provider is heavy. It revokes what a disabled account held.
  const [{ withProvider }, { DirectorySignIn }] = await Promise.all([import('./provider.js'), import('../services/directory/sign-in.js')]);
  // Silent: stdout is for the result, which says what the log would.
  const result: CheckResult = await withProvider(ctx.config, ctx.db, async (oidc) => {
    const directories = new DirectorySignIn({ db: ctx.db, cipher, provider: oidc, metrics: noMetrics, log: createLogger('silent') });
    try {
      return await directories.checkAccounts(provider);
    } finally {
      await directories.close();
    }
  });
  const counts = `checked ${result.checked} linked account(s): ${result.disabled} disabled, ${result.enabled} enabled again`;
  if (result.skipped) {
    const why = result.skipped === 'unavailable'
      ? 'the directory could not be asked (see provider test)'
      : 'the directory found none of its linked people, far likelier a wrong search base or user filter than everyone leaving';
    return { json: result, text: `${row.slug}: nothing changed: ${why}`, exitCode: EXIT_FAULT };
  }
  return { json: result, text: `${row.slug}: ${counts}` };
}

const SETTINGS_USAGE = '[--<setting> V]…';

/** Each registered kind's settings as flags, for the help: `oidc: --issuer (required)`. */
function kindSettingsHelp(): string {
  const said = (s: ProviderKind['settings'][number]) => (s.defaultValue !== undefined ? ` (default ${s.defaultValue})` : s.required ? ' (required)' : '');
  const kinds = availableKinds().map((kind) => `${kind.kind}: ${kind.settings.map((s) => `--${flagOf(s.name)}${said(s)}`).join(', ') || 'no settings'}`);
  return kinds.length ? ` Settings by --kind: ${kinds.join('; ')}.` : ' No kind is registered in this build.';
}

/** The provider commands; their flags include every registered kind's settings, read when parsed. */
export const providerCommands: Command[] = [
  {
    name: 'provider add',
    usage: `--kind K --slug S --name N --client-id ID (--client-secret-stdin | --client-secret SECRET) ${SETTINGS_USAGE} [--ca-certificate-file PEM] [--scopes "a b"] [--allow-sign-up] [--allowed-domains "example.com …"] [--trust-mfa] [--position P]`,
    get summary() {
      return `Add a sign-in provider ("Continue with N" on the sign-in pages). Pipe the client secret on standard input with --client-secret-stdin; --client-secret puts it on the command line, where other users and shell history see it. Prints the callback URL to register with the provider. For --kind ldap (a directory: LDAP, Active Directory), --client-id is the service account's DN and --client-secret-stdin its password; there is no callback URL, scopes or --trust-mfa, a setting left out takes its default, and --ca-certificate-file reads the CA certificate from a PEM file.${kindSettingsHelp()}`;
    },
    get strings() {
      return ['kind', ...COMMON_STRINGS, ...settingFlags(), CA_FILE_FLAG];
    },
    booleans: ['client-secret-stdin', ...SWITCHES, ...SWITCHES.map((s) => `no-${s}`)],
    run: providerAdd,
  },
  {
    name: 'provider list',
    usage: '',
    summary: 'List the sign-in providers in sign-in page order: slug, kind, name, status, linked identities, callback URL (--json: every setting, never the secret).',
    strings: [],
    run: providerList,
  },
  {
    name: 'provider update',
    usage: `<slug> [--slug NEW] [--name N] [--client-id ID] [--client-secret-stdin | --client-secret SECRET] ${SETTINGS_USAGE} [--ca-certificate-file PEM] [--scopes "a b"] [--allow-sign-up | --no-allow-sign-up] [--allowed-domains D] [--trust-mfa | --no-trust-mfa] [--position P]`,
    summary: 'Change a sign-in provider; a setting not named stays as it is (the client secret too: for a directory, the service account\'s password). --allowed-domains "" allows any domain; --scopes "" restores the kind\'s default scopes. A new --slug changes the callback URL.',
    get strings() {
      return [...COMMON_STRINGS, ...settingFlags(), CA_FILE_FLAG];
    },
    booleans: ['client-secret-stdin', ...SWITCHES, ...SWITCHES.map((s) => `no-${s}`)],
    argument: 'slug',
    run: providerUpdate,
  },
  {
    name: 'provider disable',
    usage: '<slug>',
    summary: 'Stop offering a sign-in provider and refuse sign-ins through it; its linked identities stay for when it is enabled again.',
    strings: [],
    argument: 'slug',
    run: (ctx) => providerSetDisabled(ctx, true),
  },
  {
    name: 'provider enable',
    usage: '<slug>',
    summary: 'Offer a disabled sign-in provider again.',
    strings: [],
    argument: 'slug',
    run: (ctx) => providerSetDisabled(ctx, false),
  },
  {
    name: 'provider remove',
    usage: '<slug>',
    summary: 'Remove a sign-in provider and unlink every identity linked through it; says how many accounts are left with no way to sign in (no password, passkey or other provider).',
    strings: [],
    argument: 'slug',
    run: providerRemove,
  },
  {
    name: 'provider test',
    usage: '<slug> [--user USERNAME]',
    summary: 'Ask a directory (LDAP) provider, with its settings as saved: without --user, whether it connects (TLS, the service account\'s DN and password) and finds the user search base; with --user, what a sign-in would read of that person (DN, unique ID, e-mail, name, whether disabled, groups, what the group mapping gives), without their password. Exits 1 when the directory cannot be used, the search base is not found or nobody is found.',
    strings: ['user'],
    argument: 'slug',
    run: providerTest,
  },
  {
    name: 'provider check',
    usage: '<slug>',
    summary: 'Check a directory (LDAP) provider\'s linked accounts now, as the service does every DIRECTORY_CHECK_INTERVAL_S: an account whose person the directory no longer finds, or marks disabled, is disabled (signed out everywhere, grants and tokens revoked), one found active again is enabled. Run it with the service\'s environment (DATABASE_URL, KEYS_SECRET, REDIS_URL). Exits 1, changing nothing, when the directory cannot be asked or finds none of its linked people.',
    strings: [],
    argument: 'slug',
    run: providerCheck,
  },
];
