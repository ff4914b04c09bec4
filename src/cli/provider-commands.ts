import { keyCipher } from '../key-encryption.js';
import { ConflictError, ValidationError } from '../errors.js';
import { presentSignInProvider } from '../presenters/sign-in-provider.js';
import type { Actor } from '../services/context.js';
import { kindOf } from '../services/federation/kinds.js';
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
import { UsageError } from './errors.js';
import type { Flags } from './flags.js';
import { readFirstLine } from './stdin.js';

/**
 * `idp provider add | list | update | disable | enable | remove`: sign-in providers from the
 * command line, through the same service as Admin → Sign-in providers. Each kind's own settings
 * (issuer URL, base URL, tenant) are flags of their own name, `--issuer`, whatever kinds this
 * build registers. The client secret is best piped on standard input (--client-secret-stdin):
 * a secret on the command line is visible to other users and kept in shell history.
 */

/** The CLI's changes are recorded in the audit trail with no user and `via: cli`. */
const ADMIN: Actor = { userId: 0, ip: null, admin: true };

const COMMON_STRINGS = ['slug', 'name', 'client-id', 'client-secret', 'scopes', 'allowed-domains', 'position'] as const;
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

/** The client secret: from standard input (preferred) or --client-secret; undefined when neither. */
async function clientSecret(ctx: CommandContext): Promise<string | undefined> {
  const { flags } = ctx;
  const typed = flags.string('client-secret');
  if (flags.has('client-secret-stdin')) {
    if (typed !== undefined) throw new UsageError('--client-secret and --client-secret-stdin: give one of them (standard input is preferred)');
    const secret = await readFirstLine(ctx.stdin);
    if (!secret.trim()) throw new UsageError('--client-secret-stdin: standard input is empty; pipe the client secret in');
    return secret;
  }
  return typed;
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
  return {
    kind: kindName,
    slug: flags.string('slug'),
    name: flags.string('name'),
    client_id: flags.string('client-id'),
    client_secret: await clientSecret(ctx),
    scopes: flags.string('scopes'),
    settings,
    allow_sign_up: switchFlag(flags, 'allow-sign-up'),
    allowed_domains: flags.string('allowed-domains'),
    trust_mfa: switchFlag(flags, 'trust-mfa'),
    position: flags.string('position'),
  };
}

/** A service's refusal of fields, naming the flags typed: `--slug must be …; --issuer: …`. */
function namingFlags(err: unknown, secretFlag: string): unknown {
  if (!(err instanceof ValidationError || err instanceof ConflictError)) return err;
  const lines = err.problems.map((problem) => {
    const flag = problem.field === 'client_secret' ? secretFlag : (FLAG_OF_FIELD[problem.field] ?? `--${flagOf(problem.field)}`);
    return problem.problem ? `${flag} ${problem.problem}` : `${flag}: ${problem.message}`;
  });
  return new UsageError(lines.join('; '));
}

/** A provider as the commands print it. */
function describe(ctx: CommandContext, row: Parameters<typeof presentSignInProvider>[0], identities = 0) {
  const provider = presentSignInProvider(row, identities);
  return { ...provider, callbackURL: callbackUrl(ctx.config.issuer, provider.slug) };
}

function summary(provider: ReturnType<typeof describe>): string[] {
  const kind = kindOf(provider.kind);
  return [
    `kind:                   ${kind?.label ?? provider.kind}`,
    ...Object.entries(provider.settings).map(([name, value]) => `${`${kind?.settings.find((s) => s.name === name)?.label ?? name}:`.padEnd(24)}${value}`),
    `client ID:              ${provider.clientId}`,
    `scopes:                 ${provider.scopes.join(' ') || '(none)'}`,
    `allow new accounts:     ${provider.allowSignUp ? 'on' : 'off'}`,
    `allowed e-mail domains: ${provider.allowedDomains.join(' ') || 'any'}`,
    `trust its two-factor:   ${provider.trustMfa ? 'on' : 'off'}`,
    `status:                 ${provider.disabled ? 'disabled' : 'enabled'}`,
    `callback URL:           ${provider.callbackURL}`,
  ];
}

async function providerAdd(ctx: CommandContext): Promise<CommandResult> {
  const kindName = ctx.flags.required('kind');
  if (!kindOf(kindName)) {
    const known = availableKinds().map((k) => k.kind);
    throw new UsageError(`--kind must be one of ${known.join(', ') || '(no kind is registered in this build)'}`);
  }
  const input = await inputOf(ctx, kindName);
  const secretFlag = ctx.flags.has('client-secret-stdin') ? '--client-secret-stdin' : '--client-secret';
  if (input.client_secret === undefined) throw new UsageError('--client-secret-stdin is required: pipe the client secret on standard input (or, for scripts, --client-secret)');
  const row = await createProvider(manageDeps(ctx), ADMIN, input).catch((err: unknown) => {
    throw namingFlags(err, secretFlag);
  });
  const provider = describe(ctx, row);
  return {
    json: provider,
    text: [`added sign-in provider ${provider.slug} ("${provider.name}")`, ...summary(provider), 'Register the callback URL with the provider. The client secret is stored and will not be shown again.'].join('\n'),
  };
}

async function providerUpdate(ctx: CommandContext): Promise<CommandResult> {
  const row = await requireProvider(ctx.db, ctx.flags.argument());
  const input = await inputOf(ctx, row.kind);
  const secretFlag = ctx.flags.has('client-secret-stdin') ? '--client-secret-stdin' : '--client-secret';
  const given = Object.entries(input).some(([field, value]) => field !== 'kind' && field !== 'settings' && value !== undefined) || Object.keys(input.settings ?? {}).length > 0;
  if (!given) throw new UsageError('nothing to change: give at least one flag to change (see --help)');
  const { row: saved, changed } = await updateProvider(manageDeps(ctx), ADMIN, row, { ...input, kind: undefined }).catch((err: unknown) => {
    throw namingFlags(err, secretFlag);
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
  const rows = listed.map((p) => [p.slug, p.kind, p.name, p.disabled ? 'disabled' : 'enabled', String(p.identities), p.callbackURL]);
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

const SETTINGS_USAGE = '[--<setting> V]…';

/** Each registered kind's settings as flags, for the help: `oidc: --issuer (required)`. */
function kindSettingsHelp(): string {
  const kinds = availableKinds().map((kind) => `${kind.kind}: ${kind.settings.map((s) => `--${flagOf(s.name)}${s.required ? ' (required)' : ''}`).join(', ') || 'no settings'}`);
  return kinds.length ? ` Settings by --kind: ${kinds.join('; ')}.` : ' No kind is registered in this build.';
}

/** The provider commands; their flags include every registered kind's settings, read when parsed. */
export const providerCommands: Command[] = [
  {
    name: 'provider add',
    usage: `--kind K --slug S --name N --client-id ID (--client-secret-stdin | --client-secret SECRET) ${SETTINGS_USAGE} [--scopes "a b"] [--allow-sign-up] [--allowed-domains "example.com …"] [--trust-mfa] [--position P]`,
    get summary() {
      return `Add a sign-in provider ("Continue with N" on the sign-in pages). Pipe the client secret on standard input with --client-secret-stdin; --client-secret puts it on the command line, where other users and shell history see it. Prints the callback URL to register with the provider.${kindSettingsHelp()}`;
    },
    get strings() {
      return ['kind', ...COMMON_STRINGS, ...settingFlags()];
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
    usage: `<slug> [--slug NEW] [--name N] [--client-id ID] [--client-secret-stdin | --client-secret SECRET] ${SETTINGS_USAGE} [--scopes "a b"] [--allow-sign-up | --no-allow-sign-up] [--allowed-domains D] [--trust-mfa | --no-trust-mfa] [--position P]`,
    summary: 'Change a sign-in provider; a setting not named stays as it is (the client secret too). --allowed-domains "" allows any domain; --scopes "" restores the kind\'s default scopes. A new --slug changes the callback URL.',
    get strings() {
      return [...COMMON_STRINGS, ...settingFlags()];
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
];
