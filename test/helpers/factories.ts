import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { createAccessToken, type NewAccessToken } from '../../src/services/access-tokens.js';
import { accessApplication, createApplication, type AppAccess } from '../../src/services/apps.js';
import { accessGroup, addMember, createGroup, type GroupAccess } from '../../src/services/groups.js';
import { createUser } from '../../src/services/users.js';
import { signIn } from './browser.js';

/** Factories build a record and whatever it needs, through the real services. */
const unique = () => randomBytes(4).toString('hex');

export const PASSWORD = 'correct horse battery';
/** The callback URL of the applications the tests register: nothing listens there, so a flow ends at the redirect. */
export const CALLBACK = 'http://127.0.0.1:9999/callback';

export type TestUser = Awaited<ReturnType<typeof makeUser>>;

/**
 * A user as an operator makes one (`idp user create`): its address verified, unless `verified:
 * false` makes one whose address was never proven (an account from before addresses had to be,
 * or made with `--unverified`).
 */
export async function makeUser(db: Knex, overrides: { username?: string; email?: string; name?: string; password?: string; verified?: boolean } = {}) {
  const { username = `user-${unique()}`, password = PASSWORD, verified = true } = overrides;
  const user = await createUser(db, { username, email: overrides.email ?? `${username}@example.test`, name: overrides.name ?? 'Test User', password }, { emailVerified: verified });
  return { ...user, password };
}

export async function makeGroup(db: Knex, ownerId: number, overrides: { name?: string; path?: string } = {}) {
  const path = overrides.path ?? `group-${unique()}`;
  return createGroup(db, { userId: ownerId, ip: null }, { name: overrides.name ?? `Group ${path}`, path });
}

export async function makeApp(
  db: Knex,
  ownerId: number,
  groupId: number,
  overrides: { callbackURL?: string; name?: string; type?: 'confidential' | 'public'; deviceFlow?: boolean; requirePushedAuthorizationRequests?: boolean; clientCredentials?: boolean } = {},
) {
  const { app, secret } = await createApplication(db, await groupAccess(db, ownerId, groupId), {
    name: overrides.name ?? 'Test App',
    homepageURL: 'https://app.example.test',
    description: 'An application for tests',
    callbackURL: overrides.callbackURL ?? CALLBACK,
    type: overrides.type,
    deviceFlow: overrides.deviceFlow,
    requirePushedAuthorizationRequests: overrides.requirePushedAuthorizationRequests,
    clientCredentials: overrides.clientCredentials,
  });
  // A public application has no secret: its clientSecret and secretId are empty.
  return { app, clientId: app.client_id, clientSecret: secret?.secret ?? '', secretId: secret?.id ?? 0 };
}

/** An application of a new group owned by `user` (a new user unless given), with what a client knows of it. */
export async function makeClient(db: Knex, options: { user?: TestUser; name?: string; redirectUri?: string } = {}) {
  const { user = await makeUser(db), name, redirectUri = CALLBACK } = options;
  const group = await makeGroup(db, user.id);
  const { clientId, clientSecret } = await makeApp(db, user.id, group.id, { callbackURL: redirectUri, name });
  return { user, group, clientId, clientSecret, redirectUri };
}

export type Client = Awaited<ReturnType<typeof makeClient>>;

/** A new user, added to the group by its owner with `role`. */
export async function joinGroup(db: Knex, group: { id: number }, owner: { id: number }, role: 'owner' | 'maintainer' | 'member'): Promise<TestUser> {
  const user = await makeUser(db);
  await addMember(db, await groupAccess(db, owner.id, group.id), { user: user.username, role });
  return user;
}

/** A group's owner signed in to the pages (`client`), and the group. */
export async function signedInOwner(server: { db: Knex; url: string }) {
  const owner = await makeUser(server.db);
  const group = await makeGroup(server.db, owner.id);
  const client = await signIn(server.url, owner);
  return { owner, group, client };
}

/** A group's owner with a read-write personal token, and the group. */
export async function ownerWithToken(db: Knex) {
  const owner = await makeUser(db);
  const group = await makeGroup(db, owner.id);
  const token = await personalToken(db, owner.id, { scopes: ['groups:read-write'] });
  return { owner, group, token };
}

/** An `ha_` token of `userId`, made by the service the pages and the CLI use. */
export async function personalToken(db: Knex, userId: number, input: Partial<NewAccessToken> = {}): Promise<string> {
  const { token } = await createAccessToken(db, userId, { name: 'test token', scopes: ['groups:read-only'], expiresInDays: 30, ...input });
  return token;
}

/** A user's access to a group, as a route's loadGroup step hands it to the services (which check the action). */
export function groupAccess(db: Knex, userId: number, groupId: number): Promise<GroupAccess> {
  return accessGroup(db, { userId, ip: null }, { id: groupId }, 'read');
}

/** A user's access to an application of a group they own. */
export function appAccess(db: Knex, userId: number, clientId: string): Promise<AppAccess> {
  return accessApplication(db, { userId, ip: null }, clientId);
}
