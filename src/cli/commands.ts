import type { Knex } from 'knex';
import { presentAccessToken } from '../presenters/access-token.js';
import { maskAddress } from '../presenters/address.js';
import { presentApp } from '../presenters/app.js';
import { presentGroup } from '../presenters/group.js';
import { presentResource, presentResourceWithSecret, resourceLinks } from '../presenters/resource.js';
import { presentUser } from '../presenters/user.js';
import { listSigningKeys, retireSigningKey, rotateSigningKey, type SigningKeyStatus } from '../provider/keys.js';
import type { Config } from '../config.js';
import { createLogger } from '../log.js';
import { createAccessToken, MAX_TOKEN_DAYS } from '../services/access-tokens.js';
import { disableUser, enableUser, sendPasswordReset, setSiteAdmin } from '../services/admin.js';
import { createMailer } from '../services/mail.js';
import { COMMAND_LINE, mailSecurityNotice, type NoticeRecipient, type SecurityEvent } from '../services/security-notices.js';
import { accessApplication, createApplication, updateApplication } from '../services/apps.js';
import type { Actor } from '../services/context.js';
import { deleteGroup } from '../services/group-deletion.js';
import { addMember, adminAccess, createGroup } from '../services/groups.js';
import { createResource, deleteResource, resourcesOf, type Resource } from '../services/resources/manage.js';
import * as rules from '../services/rules.js';
import { createUser, requireUserByUsername } from '../services/users.js';
import { sendVerification } from '../services/verification.js';
import { UsageError } from './errors.js';
import type { Flags, FlagSpec } from './flags.js';
import { clientRegistrationCommands } from './client-registration-commands.js';
import { providerCommands } from './provider-commands.js';
import { withRedis } from './redis.js';
import { readFirstLine } from './stdin.js';

/** What a command works with: an open, migrated database and its parsed flags. */
export interface CommandContext {
  db: Knex;
  flags: Flags;
  /** The migrations applied when the database was opened (every command migrates first). */
  applied: string[];
  stdin: NodeJS.ReadableStream;
  /** KEYS_SECRET: new keys are stored encrypted with it. */
  keysSecret: string | undefined;
  /** The whole configuration, for the commands that reach the provider's storage or send mail. */
  config: Config;
}

/** What a command made: the record for `--json`, and a short line (or a few) for a person. */
export interface CommandResult {
  json: object;
  text: string;
  /** Something that did not work out while the command itself did (a mail not sent): one line on stderr. */
  warning?: string;
  /**
   * The exit status when the command ran but what it checked did not pass (a directory that
   * cannot be used, a user it does not find): its report is printed all the same. 0 when unset.
   */
  exitCode?: number;
}

export interface Command extends FlagSpec {
  name: string;
  usage: string;
  summary: string;
  run(ctx: CommandContext): Promise<CommandResult>;
}

/** The admin CLI acts on any group and any account; the audit trail records its changes with no user. */
const ADMIN: Actor = { userId: 0, ip: null, admin: true };

async function migrate({ applied }: CommandContext): Promise<CommandResult> {
  return {
    json: { applied },
    text: applied.length ? `applied ${applied.length} migration(s): ${applied.join(', ')}` : 'the database is up to date',
  };
}

async function userCreate({ db, flags, stdin, config }: CommandContext): Promise<CommandResult> {
  const username = flags.required('username');
  const email = flags.required('email');
  if (!flags.has('password-stdin')) {
    throw new UsageError('--password-stdin is required: pipe the password on standard input');
  }
  const password = await readFirstLine(stdin);
  const admin = flags.has('admin');
  // The operator vouches for the address, unless told not to: then the address is proven by the mailed link.
  const emailVerified = !flags.has('unverified');
  // With --admin, the account never exists without its role: both or neither.
  const user = await db.transaction(async (trx) => {
    const created = await createUser(trx, { username, email, name: flags.string('name'), password }, { emailVerified });
    if (admin) await setSiteAdmin(trx, ADMIN, created, true);
    return created;
  });
  if (!emailVerified) await mailVerificationLink(db, config, user);
  const made = `created ${admin ? 'site administrator' : 'user'} ${user.username} (id ${user.id})`;
  return {
    json: { ...presentUser(user), emailVerified, ...(admin ? { admin } : {}) },
    text: emailVerified ? made : `${made}; a link to verify the address went to ${maskAddress(user.email)}`,
  };
}

/** The verification mail of an account made with --unverified; the account stays if the mail server refuses. */
async function mailVerificationLink(db: Knex, config: Config, user: { id: number; username: string; email: string }): Promise<void> {
  // Silent: with no SMTP_URL outside production the mailer would log the link, and the link is a secret.
  const log = createLogger('silent');
  const mailer = createMailer({ ...config.mail, logLinks: false, logger: log });
  try {
    await sendVerification({ db, config, mailer, log }, user);
  } catch (err) {
    throw new Error(`created user ${user.username} (id ${user.id}), but the verification mail could not be sent (${(err as Error).message}); once signed in, they can ask for a new link with Resend the link`, { cause: err });
  } finally {
    mailer.close();
  }
}

async function userSetAdmin({ db, flags, config }: CommandContext): Promise<CommandResult> {
  const user = await requireUserByUsername(db, flags.argument(), 'username');
  const admin = !flags.has('off');
  // With Redis, so that running instances stop (or start) treating the account as an administrator at once.
  const changed = await withRedis(config, db, () => setSiteAdmin(db, ADMIN, user, admin));
  const now = admin ? 'a site administrator' : 'not a site administrator';
  return {
    json: { username: user.username, admin, changed },
    text: changed ? `${user.username} is now ${now}` : `${user.username} was already ${now}`,
  };
}

async function userDisable({ db, flags, config }: CommandContext): Promise<CommandResult> {
  const user = await requireUserByUsername(db, flags.argument(), 'username');
  // Loaded here only: oidc-provider is heavy, and on a Node.js older than it wants it prints a
  // warning on stderr as it loads, which no other command should.
  const { withProvider } = await import('./provider.js');
  const result = await withProvider(config, db, (provider) => disableUser({ db, provider }, ADMIN, user));
  return {
    json: { username: user.username, disabled: true, ...result },
    text: [
      result.changed ? `disabled ${user.username}` : `${user.username} was already disabled`,
      `signed out everywhere; revoked ${result.grants} authorized application(s) and ${result.accessTokens} personal access token(s)`,
    ].join('\n'),
  };
}

async function userEnable({ config, db, flags }: CommandContext): Promise<CommandResult> {
  const user = await requireUserByUsername(db, flags.argument(), 'username');
  const changed = await withRedis(config, db, () => enableUser(db, ADMIN, user));
  return {
    json: { username: user.username, disabled: false, changed },
    text: changed ? `enabled ${user.username}: they can sign in again` : `${user.username} was not disabled`,
  };
}

async function userResetPassword({ db, flags, config }: CommandContext): Promise<CommandResult> {
  const user = await requireUserByUsername(db, flags.argument(), 'username');
  // Silent: with no SMTP_URL outside production the mailer would log the link, and the link is a secret.
  const log = createLogger('silent');
  const mailer = createMailer({ ...config.mail, logLinks: false, logger: log });
  try {
    await sendPasswordReset({ db, config, mailer, log }, ADMIN, user);
  } finally {
    mailer.close();
  }
  const to = maskAddress(user.email);
  return { json: { username: user.username, sentTo: to }, text: `sent to ${to}` };
}

async function groupCreate({ db, flags }: CommandContext): Promise<CommandResult> {
  const name = flags.required('name');
  const path = flags.required('path');
  const owner = await requireUserByUsername(db, flags.required('owner'), 'owner');
  // The owner becomes the group's first member; the change is recorded as the CLI's.
  const group = await createGroup(db, { ...ADMIN, userId: owner.id }, {
    name,
    path,
    description: flags.string('description'),
    visibilityLevel: flags.string('visibility') as 'private' | 'internal' | 'public' | undefined,
  });
  return {
    json: presentGroup(group),
    text: `created group ${group.path} (id ${group.id}), owned by ${owner.username}`,
  };
}

async function groupAddMember({ db, flags }: CommandContext): Promise<CommandResult> {
  const access = await adminAccess(db, ADMIN, flags.required('group'));
  const { group } = access;
  const role = flags.required('role');
  const user = await addMember(db, access, { user: flags.required('user'), role });
  return {
    json: { groupId: Number(group.id), userId: Number(user.id), username: user.username, role },
    text: `added ${user.username} to ${group.path} as ${role}`,
  };
}

async function appCreate({ db, flags }: CommandContext): Promise<CommandResult> {
  const access = await adminAccess(db, ADMIN, flags.required('group'));
  const { group } = access;
  const { app, secret } = await createApplication(db, access, {
    name: flags.required('name'),
    homepageURL: flags.required('homepage-url'),
    callbackURL: flags.required('callback-url'),
    description: flags.string('description'),
    signOutRedirectURLs: flags.list('sign-out-url'),
    type: flags.has('public') ? 'public' : 'confidential',
    deviceFlow: flags.has('device-flow'),
    requirePushedAuthorizationRequests: flags.has('require-par'),
    backchannelLogoutURL: flags.string('backchannel-logout-url') ?? null,
    clientCredentials: flags.has('client-credentials'),
  });
  return {
    json: presentApp(app, { secret: secret?.secret }),
    text: [
      `created ${app.client_type} application "${app.name}" in ${group.path}`,
      `clientID:     ${app.client_id}`,
      ...(app.device_flow || app.require_pushed_authorization_requests || app.allow_client_credentials || app.backchannel_logout_uri ? [switchesText(app)] : []),
      ...(secret
        ? [`clientSecret: ${secret.secret}`, 'Copy the client secret now: it will not be shown again.']
        : ['A public application has no client secret: its authorization requests must carry a PKCE code_challenge (S256).']),
    ].join('\n'),
  };
}

/** A `--scope name=description` as the rules take it; the description may hold `=` too. */
function scopeOf(flag: string): { name: string; description: string } {
  const at = flag.indexOf('=');
  if (at < 0) throw new UsageError(`--scope ${JSON.stringify(flag)}: give the scope as name=description, such as --scope 'tools:read=Read your tools'`);
  return { name: flag.slice(0, at), description: flag.slice(at + 1) };
}

/** A resource as a person reads it: what its server is configured with. */
function resourceText(resource: Resource, issuer: string): string[] {
  const links = resourceLinks(issuer, resource.identifier);
  return [
    `identifier:            ${resource.identifier}`,
    `token format:          ${resource.tokenFormat}`,
    `scopes:                ${resource.scopes.map((s) => s.name).join(' ')}`,
    `clientID:              ${resource.clientId}`,
    `introspection:         ${links.introspectionEndpoint}`,
    `metadata:              ${links.metadataUrl}`,
  ];
}

async function resourceCreate({ db, flags, config }: CommandContext): Promise<CommandResult> {
  const access = await adminAccess(db, ADMIN, flags.required('group'));
  const scopes = flags.list('scope');
  if (!scopes.length) throw new UsageError('--scope is required: give it once for each scope, as name=description');
  const { resource, secret } = await createResource({ db, issuer: config.issuer }, access, {
    identifier: flags.required('identifier'),
    name: flags.required('name'),
    scopes: scopes.map(scopeOf),
    tokenFormat: flags.string('token-format'),
  });
  return {
    json: presentResourceWithSecret(resource, resourceLinks(config.issuer, resource.identifier), secret),
    text: [
      `created resource "${resource.name}" in ${access.group.path}`,
      ...resourceText(resource, config.issuer),
      `clientSecret:          ${secret}`,
      'Copy the client secret now: it will not be shown again. The resource\'s server introspects tokens with the client ID and this secret (HTTP Basic).',
    ].join('\n'),
  };
}

async function resourceList({ db, flags, config }: CommandContext): Promise<CommandResult> {
  const access = await adminAccess(db, ADMIN, flags.required('group'));
  const resources = await resourcesOf(db, access);
  return {
    json: { resources: resources.map((r) => presentResource(r, resourceLinks(config.issuer, r.identifier))) },
    text: resources.length
      ? resources.map((r) => [`"${r.name}" (id ${r.id})`, ...resourceText(r, config.issuer).map((line) => `  ${line}`)].join('\n')).join('\n\n')
      : `${access.group.path} has no resources`,
  };
}

async function resourceDelete({ db, flags }: CommandContext): Promise<CommandResult> {
  const access = await adminAccess(db, ADMIN, flags.required('group'));
  const given = flags.required('identifier');
  // As clients write it or in its normal form (https://host and https://host/ alike).
  const href = URL.parse(given)?.href;
  const resource = (await resourcesOf(db, access)).find((r) => r.identifier === href);
  if (!resource) throw new UsageError(`--identifier: ${access.group.path} has no resource ${JSON.stringify(given)}`);
  await deleteResource(db, access, resource.id);
  return {
    json: { groupId: Number(access.group.id), id: resource.id, identifier: resource.identifier, deleted: true },
    text: `deleted resource "${resource.name}" (${resource.identifier}) of ${access.group.path}; clients can no longer ask for it, and its server can no longer introspect`,
  };
}

/**
 * `--on` and `--no-on` of one switch: true, false, or undefined when neither was given (the
 * setting stays as it is); both at once is refused.
 */
function switchFlag(flags: Flags, name: string): boolean | undefined {
  if (flags.has(name) && flags.has(`no-${name}`)) throw new UsageError(`--${name} and --no-${name}: give one of them`);
  return flags.has(name) ? true : flags.has(`no-${name}`) ? false : undefined;
}

/** The application's settings after a change, as a person reads them. */
function switchesText(app: { device_flow: boolean | number; require_pushed_authorization_requests: boolean | number; allow_client_credentials: boolean | number; backchannel_logout_uri?: string | null }): string {
  return [
    `device flow:                       ${app.device_flow ? 'enabled' : 'disabled'}`,
    `pushed authorization requests:     ${app.require_pushed_authorization_requests ? 'required' : 'not required'}`,
    `client credentials grant:          ${app.allow_client_credentials ? 'allowed' : 'not allowed'}`,
    `back-channel logout URL:           ${app.backchannel_logout_uri || 'none'}`,
  ].join('\n');
}

async function appUpdate({ config, db, flags }: CommandContext): Promise<CommandResult> {
  const access = await accessApplication(db, ADMIN, flags.argument());
  const changes = {
    deviceFlow: switchFlag(flags, 'device-flow'),
    requirePushedAuthorizationRequests: switchFlag(flags, 'require-par'),
    clientCredentials: switchFlag(flags, 'client-credentials'),
    // Back-channel logout: a URL, or '' to remove it.
    backchannelLogoutURL: flags.string('backchannel-logout-url'),
  };
  if (Object.values(changes).every((value) => value === undefined)) {
    throw new UsageError('nothing to change: give --device-flow, --no-device-flow, --require-par, --no-require-par, --client-credentials, --no-client-credentials or --backchannel-logout-url');
  }
  // Without the token storage (oidc-provider is heavy, and warns as it loads on an older Node.js):
  // only an edit of the callback URL, which this command does not make, ends grants.
  const app = await withRedis(config, db, () => updateApplication(db, undefined, access, changes));
  // Switches already as asked change nothing: no write, and updatedAt stays.
  const changed = String(app.updated_at) !== String(access.app.updated_at);
  return {
    json: presentApp(app),
    text: [`${changed ? 'updated' : 'nothing changed on'} application "${app.name}" (${app.client_id})`, switchesText(app)].join('\n'),
  };
}

async function groupDelete({ db, flags, config }: CommandContext): Promise<CommandResult> {
  const access = await adminAccess(db, ADMIN, flags.required('group'));
  const { group } = access;
  // Loaded here only, as for user disable: oidc-provider is heavy.
  const { withProvider } = await import('./provider.js');
  const gone = await withProvider(config, db, (provider) => deleteGroup(db, provider, access));
  return {
    json: { groupId: Number(group.id), path: group.path, ...gone },
    text: `deleted group ${group.path} with ${gone.members} member(s) and ${gone.applications} application(s); every token of those applications is revoked`,
  };
}

/**
 * Mails the account's owner a security notice of a change made here, as the pages do, saying it
 * came from the command line. The change stands whatever the mail server says: a refusal comes
 * back as a warning line.
 */
async function noticeFromCommandLine(config: Config, user: NoticeRecipient, event: SecurityEvent, detail: string): Promise<string | undefined> {
  // Silent: without SMTP_URL outside production the mailer would log to stdout, which is for results.
  const mailer = createMailer({ ...config.mail, logLinks: false, logger: createLogger('silent') });
  try {
    await mailSecurityNotice({ config, mailer }, user, event, COMMAND_LINE, { detail });
    return undefined;
  } catch (err) {
    return `the security notice to ${maskAddress(user.email)} was not sent: ${err instanceof Error ? err.message : String(err)}`;
  } finally {
    mailer.close();
  }
}

async function tokenCreate({ db, flags, config }: CommandContext): Promise<CommandResult> {
  const user = await requireUserByUsername(db, flags.required('user'), 'user');
  // --group P (repeatable): the token acts only in those groups; none given, in all the user's.
  const paths = flags.list('group');
  const groupIds: number[] = [];
  for (const path of paths) groupIds.push(Number((await adminAccess(db, ADMIN, path)).group.id));
  const { token, row } = await createAccessToken(db, user.id, {
    name: flags.required('name'),
    scopes: flags.required('scope').split(/[\s,]+/).filter(Boolean) as never,
    expiresInDays: expiresInDays(flags.string('expires-in-days')),
    groups: paths.length ? groupIds : 'all',
  });
  const reach = row.groups ? `only in ${row.groups.map((g) => g.path).join(', ')}` : 'all groups';
  const warning = await noticeFromCommandLine(config, user, 'personal-token-created', row.name);
  return {
    warning,
    json: presentAccessToken(row, token),
    text: [
      `created personal access token "${row.name}" for ${user.username} (scopes: ${row.scopes}; ${reach}; ${row.expires_at ? `expires ${new Date(row.expires_at).toISOString()}` : 'never expires'})`,
      token,
      'Copy the token now: it will not be shown again.',
    ].join('\n'),
  };
}

/** `--expires-in-days` as a number of days (the service checks the range); left out, the token never expires. */
function expiresInDays(flag: string | undefined): number | null {
  if (flag === undefined) return null;
  const days = rules.wholeNumber().safeParse(flag);
  if (!days.success) {
    throw new UsageError(`--expires-in-days: must be a whole number of days from 1 to ${MAX_TOKEN_DAYS} (leave it out for a token that never expires)`);
  }
  return days.data;
}

async function keysRotate({ db, keysSecret, config }: CommandContext): Promise<CommandResult> {
  // With Redis, so that running instances publish the new key at their very next JWKS request.
  const key = await withRedis(config, db, () => rotateSigningKey(db, keysSecret, config.keyActivationDelayS));
  return {
    json: { kid: key.kid, createdAt: key.createdAt, activeFrom: key.activeFrom },
    text: [
      key.activeFrom === key.createdAt
        ? `added signing key ${key.kid}: it signs at once (no key was signing, or KEY_ACTIVATION_DELAY_S=0); every running instance takes it up within seconds`
        : `added signing key ${key.kid}: every running instance publishes it within seconds, and signs with it from ${key.activeFrom} (KEY_ACTIVATION_DELAY_S=${config.keyActivationDelayS})`,
      'the older keys keep verifying; retire the previous one (idp keys retire <kid>) once its tokens have expired (idp keys list says when)',
    ].join('\n'),
  };
}

async function keysRetire({ db, flags, keysSecret, config }: CommandContext): Promise<CommandResult> {
  const kid = flags.argument();
  const retired = await withRedis(config, db, () => retireSigningKey(db, keysSecret, kid, { force: flags.has('force') }));
  return {
    json: { kid: retired.kid, state: retired.state, retired: true },
    text: `retired signing key ${retired.kid}: every running instance stops publishing it within seconds${retired.state === 'pending' ? ' (it had not signed yet)' : ''}`,
  };
}

async function keysList({ db, keysSecret }: CommandContext): Promise<CommandResult> {
  const keys = await listSigningKeys(db, keysSecret);
  return {
    json: { keys },
    text: keys.map(describeKey).join('\n'),
  };
}

/** One signing key as a line: its kid, its times, and what it does now. */
function describeKey(key: SigningKeyStatus): string {
  const now = {
    signing: 'signs now',
    pending: 'published, not signing yet',
    previous: `verifies only (signed until ${key.signedUntil}); retire it from ${key.retirableFrom}`,
  }[key.state];
  return `${key.kid}  created ${key.createdAt}  active from ${key.activeFrom}  ${now}`;
}

/** Every command, in the order the usage text lists them. */
export const commands: Command[] = [
  {
    name: 'migrate',
    usage: '',
    summary: 'Apply pending database migrations (every command does this first).',
    strings: [],
    run: migrate,
  },
  {
    name: 'user create',
    usage: '--username U --email E [--name N] [--admin] [--unverified] --password-stdin',
    summary: 'Create a user (with --admin, a site administrator). The password is the first line of standard input. The address counts as verified (you vouch for it); with --unverified it is not, and a link to verify it is mailed.',
    strings: ['username', 'email', 'name'],
    booleans: ['password-stdin', 'admin', 'unverified'],
    run: userCreate,
  },
  {
    name: 'user set-admin',
    usage: '<username> [--off]',
    summary: 'Make a user a site administrator (the Admin area), or with --off no longer one.',
    strings: [],
    booleans: ['off'],
    argument: 'username',
    run: userSetAdmin,
  },
  {
    name: 'user disable',
    usage: '<username>',
    summary: 'Disable an account: signed out everywhere, its grants and tokens revoked, sign-in refused until enabled.',
    strings: [],
    argument: 'username',
    run: userDisable,
  },
  {
    name: 'user enable',
    usage: '<username>',
    summary: 'Let a disabled account sign in again (what disabling revoked stays revoked).',
    strings: [],
    argument: 'username',
    run: userEnable,
  },
  {
    name: 'user reset-password',
    usage: '<username>',
    summary: "Mail the user a password reset link (1 hour, single use) at their address; prints only where it went, masked.",
    strings: [],
    argument: 'username',
    run: userResetPassword,
  },
  {
    name: 'group create',
    usage: '--name N --path P --owner U [--description D] [--visibility private|internal|public]',
    summary: 'Create a group owned by user U.',
    strings: ['name', 'path', 'owner', 'description', 'visibility'],
    run: groupCreate,
  },
  {
    name: 'group add-member',
    usage: '--group P --user U --role owner|maintainer|member',
    summary: 'Give user U (username or email) a role in the group at path P.',
    strings: ['group', 'user', 'role'],
    run: groupAddMember,
  },
  {
    name: 'group delete',
    usage: '--group P',
    summary: 'Delete the group at path P with its members and applications; every token of its applications is revoked.',
    strings: ['group'],
    run: groupDelete,
  },
  {
    name: 'app create',
    usage: '--group P --name N --homepage-url URL --callback-url URL [--description D] [--sign-out-url URL]… [--public] [--device-flow] [--require-par] [--client-credentials] [--backchannel-logout-url URL]',
    summary: 'Create an OAuth application of the group at path P; prints its client secret once. Repeat --sign-out-url for each sign-out redirect URL. --public: a native or single-page application, with no secret and PKCE required. --device-flow: Enable Device Flow (the device authorization grant). --require-par: Require pushed authorization requests. --client-credentials: Allow the application to act as itself (the client credentials grant, for its own group only; not for --public).',
    strings: ['group', 'name', 'homepage-url', 'callback-url', 'description', 'backchannel-logout-url'],
    booleans: ['public', 'device-flow', 'require-par', 'client-credentials'],
    lists: ['sign-out-url'],
    run: appCreate,
  },
  {
    name: 'app update',
    usage: '<client-id> [--device-flow | --no-device-flow] [--require-par | --no-require-par] [--client-credentials | --no-client-credentials] [--backchannel-logout-url URL]',
    summary: 'Change the settings of the application with that client ID: Enable Device Flow on or off, Require pushed authorization requests on or off, Allow the application to act as itself on or off, the back-channel logout URL (an empty one removes it). A setting not named stays as it is.',
    strings: ['backchannel-logout-url'],
    booleans: ['device-flow', 'no-device-flow', 'require-par', 'no-require-par', 'client-credentials', 'no-client-credentials'],
    argument: 'client-id',
    run: appUpdate,
  },
  {
    name: 'resource create',
    usage: "--group P --identifier URL --name N --scope 'name=description'… [--token-format opaque|jwt]",
    summary: "Register a resource of the group at path P: an API (an MCP server, say) whose tokens clients ask for with resource=URL (RFC 8707). Repeat --scope for each scope it defines, as name=description (the consent page shows the description). --token-format: opaque ho_ tokens its server introspects (the default), or RFC 9068 JWTs. Prints the client ID and secret its server introspects with; the secret once.",
    strings: ['group', 'identifier', 'name', 'token-format'],
    lists: ['scope'],
    run: resourceCreate,
  },
  {
    name: 'resource list',
    usage: '--group P',
    summary: 'List the resources of the group at path P, with the client ID each one\'s server introspects with (never its secret).',
    strings: ['group'],
    run: resourceList,
  },
  {
    name: 'resource delete',
    usage: '--group P --identifier URL',
    summary: 'Delete the resource of the group at path P with that identifier: clients can no longer ask for it, and its server can no longer introspect.',
    strings: ['group', 'identifier'],
    run: resourceDelete,
  },
  {
    name: 'token create',
    usage: '--user U --name N --scope "groups:read-only [groups:read-write]" [--expires-in-days D] [--group P ...]',
    summary: "Create a personal access token (ha_…) for user U; prints it once, and mails U a security notice. No --expires-in-days: it never expires. --group P (repeat it): the token acts only in those groups of U's; none, in all of them.",
    strings: ['user', 'name', 'scope', 'expires-in-days'],
    lists: ['group'],
    run: tokenCreate,
  },
  {
    name: 'keys rotate',
    usage: '',
    summary: 'Add a new signing key: published by every running instance at once, it signs from KEY_ACTIVATION_DELAY_S (default 3600) seconds later; the old ones stay published for verification.',
    strings: [],
    run: keysRotate,
  },
  {
    name: 'keys list',
    usage: '',
    summary: 'List the signing keys: kid, created, active from, and whether each signs now, is not active yet, or only verifies (and from when it may be retired).',
    strings: [],
    run: keysList,
  },
  {
    name: 'keys retire',
    usage: '<kid> [--force]',
    summary: 'Remove a signing key: no instance publishes or verifies with it any more. Refused for the key that signs now, and for one whose tokens may still be valid unless --force.',
    strings: [],
    booleans: ['force'],
    argument: 'kid',
    run: keysRetire,
  },
  ...providerCommands,
  ...clientRegistrationCommands,
];
