import type { Knex } from 'knex';
import { presentAccessToken } from '../presenters/access-token.js';
import { presentApp } from '../presenters/app.js';
import { presentGroup } from '../presenters/group.js';
import { presentUser } from '../presenters/user.js';
import { rotateSigningKey } from '../provider/keys.js';
import { createAccessToken, MAX_TOKEN_DAYS } from '../services/access-tokens.js';
import { createApplication } from '../services/apps.js';
import type { Actor } from '../services/context.js';
import { addMember, adminAccess, createGroup } from '../services/groups.js';
import * as rules from '../services/rules.js';
import { createUser, requireUserByUsername } from '../services/users.js';
import { UsageError } from './errors.js';
import type { Flags, FlagSpec } from './flags.js';
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
}

/** What a command made: the record for `--json`, and a short line (or a few) for a person. */
export interface CommandResult {
  json: object;
  text: string;
}

export interface Command extends FlagSpec {
  name: string;
  usage: string;
  summary: string;
  run(ctx: CommandContext): Promise<CommandResult>;
}

/** The admin CLI acts on any group; the audit trail records its changes with no user. */
const ADMIN: Actor = { userId: 0, ip: null, admin: true };

async function migrate({ applied }: CommandContext): Promise<CommandResult> {
  return {
    json: { applied },
    text: applied.length ? `applied ${applied.length} migration(s): ${applied.join(', ')}` : 'the database is up to date',
  };
}

async function userCreate({ db, flags, stdin }: CommandContext): Promise<CommandResult> {
  const username = flags.required('username');
  const email = flags.required('email');
  if (!flags.has('password-stdin')) {
    throw new UsageError('--password-stdin is required: pipe the password on standard input');
  }
  const password = await readFirstLine(stdin);
  const user = await createUser(db, { username, email, name: flags.string('name'), password });
  return { json: presentUser(user), text: `created user ${user.username} (id ${user.id})` };
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
  });
  return {
    json: presentApp(app, { secret: secret.secret }),
    text: [
      `created application "${app.name}" in ${group.path}`,
      `clientID:     ${app.client_id}`,
      `clientSecret: ${secret.secret}`,
      'Copy the client secret now: it will not be shown again.',
    ].join('\n'),
  };
}

async function tokenCreate({ db, flags }: CommandContext): Promise<CommandResult> {
  const user = await requireUserByUsername(db, flags.required('user'), 'user');
  const { token, row } = await createAccessToken(db, user.id, {
    name: flags.required('name'),
    scopes: flags.required('scope').split(/[\s,]+/).filter(Boolean) as never,
    expiresInDays: expiresInDays(flags.string('expires-in-days')),
  });
  return {
    json: presentAccessToken(row, token),
    text: [
      `created personal access token "${row.name}" for ${user.username} (scopes: ${row.scopes}; ${row.expires_at ? `expires ${new Date(row.expires_at).toISOString()}` : 'never expires'})`,
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

async function keysRotate({ db, keysSecret }: CommandContext): Promise<CommandResult> {
  const { kid } = await rotateSigningKey(db, keysSecret);
  return {
    json: { kid },
    text: `added signing key ${kid}; each instance signs with it from its next start, older keys keep verifying`,
  };
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
    usage: '--username U --email E [--name N] --password-stdin',
    summary: 'Create a user. The password is the first line of standard input.',
    strings: ['username', 'email', 'name'],
    booleans: ['password-stdin'],
    run: userCreate,
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
    name: 'app create',
    usage: '--group P --name N --homepage-url URL --callback-url URL [--description D] [--sign-out-url URL]…',
    summary: 'Create an OAuth application of the group at path P; prints its client secret once. Repeat --sign-out-url for each sign-out redirect URL.',
    strings: ['group', 'name', 'homepage-url', 'callback-url', 'description'],
    lists: ['sign-out-url'],
    run: appCreate,
  },
  {
    name: 'token create',
    usage: '--user U --name N --scope "groups:read-only [groups:read-write]" [--expires-in-days D]',
    summary: "Create a personal access token (ha_…) for user U; prints it once. No --expires-in-days: it never expires.",
    strings: ['user', 'name', 'scope', 'expires-in-days'],
    run: tokenCreate,
  },
  {
    name: 'keys rotate',
    usage: '',
    summary: 'Add a new signing key; the old ones stay published for verification.',
    strings: [],
    run: keysRotate,
  },
];
