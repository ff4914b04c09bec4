import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import type Provider from 'oidc-provider';
import { ConflictError, NotFoundError, problemOf } from '../errors.js';
import * as apps from '../db/apps.js';
import { countGrantsOfClient, deleteUserGrantByGrantId, grantIdsOfClient } from '../db/grants.js';
import { recordAudit } from '../db/audit.js';
import { isClientId } from '../ids.js';
import { now } from '../time.js';
import { digest, generateToken } from '../tokens.js';
import { changeVersionsOf, changing, type VersionedCache } from './change-versions.js';
import { auditActorId, changedFields, type Actor } from './context.js';
import { revokeGrant } from './grants.js';
import { accessGroup, requireGroupAction, type GroupAccess } from './groups.js';
import * as rules from './rules.js';
import { claimSubmission, completeSubmission, type SubmissionKey } from './submissions.js';

export const MAX_ACTIVE_SECRETS = 2;

export { signOutUrlsOf } from '../db/apps.js';
export interface NewSecret {
  id: number;
  secret: string;
  lastFour: string;
  createdAt: string;
}

async function addSecret(trx: Knex, appId: number, at: string): Promise<NewSecret> {
  const secret = generateToken('hs_');
  const row = await apps.insertSecret(trx, { appId, digest: digest(secret), lastFour: secret.slice(-4), at });
  return { id: row.id, secret, lastFour: row.last_four, createdAt: at };
}

/** An application and the access to its group through which it was reached. */
export interface AppAccess extends GroupAccess {
  app: apps.AppRow;
}

export const NO_APP = 'no such application, or you are not a member of its group';

/** A value that cannot be a client id is not looked up. */
async function findApp(db: Knex, clientId: string): Promise<apps.AppRow | undefined> {
  return isClientId(clientId) ? apps.findAppByClientId(db, clientId) : undefined;
}

/**
 * An application named by its client id alone (the API), for its owners: no application and one
 * of a group the actor is not in read the same (404); a member who is not an owner gets 403.
 */
export async function accessApplication(db: Knex, actor: Actor, clientId: string): Promise<AppAccess> {
  const app = await findApp(db, clientId);
  if (!app) throw new NotFoundError(NO_APP);
  try {
    return { ...(await accessGroup(db, actor, { id: app.group_id }, 'manage-apps')), app };
  } catch (err) {
    if (err instanceof NotFoundError) throw new NotFoundError(NO_APP);
    throw err;
  }
}

/** An application under a group already reached (the pages' addresses): one of another group is a 404. */
export async function applicationOfGroup(db: Knex, access: GroupAccess, clientId: string): Promise<AppAccess> {
  requireGroupAction(access, 'manage-apps');
  const app = await findApp(db, clientId);
  if (!app || Number(app.group_id) !== Number(access.group.id)) throw new NotFoundError('no such application in this group');
  return { ...access, app };
}

/** The applications of a group, a page at a time (owners only). */
export function applicationsOf(db: Knex, access: GroupAccess, page: { limit: number; offset: number }) {
  requireGroupAction(access, 'manage-apps');
  return apps.pageAppsOfGroup(db, access.group.id, page);
}

/** An application's active secrets: creation time, last four characters and last use, never the secret. */
export function secretsOf(db: Knex, access: AppAccess): Promise<apps.SecretRow[]> {
  requireGroupAction(access, 'manage-apps');
  return apps.listSecrets(db, access.app.id);
}

/**
 * Creates an application of a group (owners only); a confidential one with its first secret,
 * shown to the caller once, a public one with none. With a form's one-time key, a repeated
 * submission creates nothing (RepeatedSubmission).
 */
export async function createApplication(
  db: Knex,
  access: GroupAccess,
  input: unknown,
  submission?: SubmissionKey,
): Promise<{ app: apps.AppRow; secret: NewSecret | undefined }> {
  requireGroupAction(access, 'manage-apps');
  const { actor, group: { id: groupId } } = access;
  const data = rules.parse(rules.newApplication, input);
  return db.transaction(async (trx) => {
    await claimSubmission(trx, submission);
    const at = now();
    const app = await apps.insertApp(trx, {
      client_id: randomBytes(10).toString('hex'),
      group_id: groupId,
      name: data.name,
      homepage_url: data.homepageURL,
      description: data.description,
      callback_url: data.callbackURL,
      sign_out_urls: apps.storedSignOutUrls(data.signOutRedirectURLs),
      client_type: data.type,
      device_flow: data.deviceFlow,
      require_pushed_authorization_requests: data.requirePushedAuthorizationRequests,
      backchannel_logout_uri: data.backchannelLogoutURL,
      allow_client_credentials: data.clientCredentials,
      created_by: auditActorId(actor),
      at,
    });
    const secret = isPublic(app) ? undefined : await addSecret(trx, app.id, at);
    await completeSubmission(trx, submission, app.client_id);
    await recordAudit(trx, { groupId, actorId: auditActorId(actor), action: 'app.create', target: app.client_id, details: { name: app.name, type: data.type }, ip: actor.ip }, at);
    return { app, secret };
  });
}

/**
 * Edits an application (owners only). A new callback URL is a new place codes are sent to, and a
 * grant skips the consent page that says where that is: so every grant of the application ends
 * with its codes and tokens, and each user consents again (the audit record says how many). They
 * end before the change, then again after it for any given in between, so a failure leaves either
 * nothing changed or the new callback with at most those grants, never the new callback with
 * every old grant (which a retry of the same edit, changing nothing, would not end). `provider`
 * reaches the token storage; only a caller that never changes the callback may leave it out.
 */
/**
 * A client that registered itself (a metadata document, or dynamic registration) is described by
 * its own document or registration, which a later fetch or RFC 7592 update would overwrite: its
 * owners may delete it, or end its users' tokens, but not edit it or give it a secret.
 */
function refuseSelfRegistered(app: apps.AppRow, field: string): void {
  if (app.registered_by) {
    throw new ConflictError(field, 'this application registered itself automatically: its metadata document or registration decides its settings (delete it instead)');
  }
}

export async function updateApplication(db: Knex, provider: Provider | undefined, access: AppAccess, input: unknown): Promise<apps.AppRow> {
  requireGroupAction(access, 'manage-apps');
  const { actor, app } = access;
  refuseSelfRegistered(app, 'name');
  const data = rules.parse(rules.applicationChanges, input);
  const publicProblem = data.callbackURL !== undefined && isPublic(app) ? rules.publicCallbackProblem(data.callbackURL) : undefined;
  if (publicProblem) throw rules.invalidFields([{ field: 'callbackURL', problem: problemOf('callbackURL', publicProblem), message: publicProblem }]);
  if (data.clientCredentials && isPublic(app)) {
    throw rules.invalidFields([{ field: 'clientCredentials', problem: problemOf('clientCredentials', rules.PUBLIC_CLIENT_CREDENTIALS), message: rules.PUBLIC_CLIENT_CREDENTIALS }]);
  }
  const fields = {
    name: data.name ?? app.name,
    homepage_url: data.homepageURL ?? app.homepage_url,
    description: data.description ?? app.description,
    callback_url: data.callbackURL ?? app.callback_url,
    sign_out_urls: data.signOutRedirectURLs ? apps.storedSignOutUrls(data.signOutRedirectURLs) : app.sign_out_urls,
    device_flow: data.deviceFlow ?? Boolean(app.device_flow),
    require_pushed_authorization_requests: data.requirePushedAuthorizationRequests ?? Boolean(app.require_pushed_authorization_requests),
    // Back-channel logout: undefined keeps the URL, null (or '') removes it.
    backchannel_logout_uri: data.backchannelLogoutURL === undefined ? app.backchannel_logout_uri ?? null : data.backchannelLogoutURL,
    allow_client_credentials: data.clientCredentials ?? Boolean(app.allow_client_credentials),
  };
  const at = now();
  const changes = changedFields(
    {
      name: app.name, homepageURL: app.homepage_url, description: app.description, callbackURL: app.callback_url, signOutRedirectURLs: apps.signOutUrlsOf(app),
      deviceFlow: Boolean(app.device_flow), requirePushedAuthorizationRequests: Boolean(app.require_pushed_authorization_requests),
      backchannelLogoutURL: app.backchannel_logout_uri ?? null,
      clientCredentials: Boolean(app.allow_client_credentials),
    },
    {
      name: fields.name, homepageURL: fields.homepage_url, description: fields.description, callbackURL: fields.callback_url, signOutRedirectURLs: apps.signOutUrlsOf(fields),
      deviceFlow: fields.device_flow, requirePushedAuthorizationRequests: fields.require_pushed_authorization_requests,
      backchannelLogoutURL: fields.backchannel_logout_uri,
      clientCredentials: fields.allow_client_credentials,
    },
  );
  // A save that changes nothing writes nothing: no audit row, and updatedAt stays.
  if (!Object.keys(changes).length) return app;
  const callbackChanged = fields.callback_url !== app.callback_url;
  const endGrants = async () => {
    // A caller without the token storage (the CLI's switches) never changes the callback.
    if (!provider) throw new Error('a new callback URL ends the application\'s grants: updateApplication needs the provider');
    const grantIds = await grantIdsOfClient(db, app.client_id);
    await revokeGrants(db, provider, grantIds);
    return grantIds.length;
  };
  const ended = callbackChanged ? await endGrants() : 0;
  await changing(db, [`app:${app.client_id}`], () =>
    db.transaction(async (trx) => {
      await apps.updateApp(trx, app.id, { ...fields, at });
      const details = callbackChanged ? { changes, authorizationsEnded: ended } : { changes };
      await recordAudit(trx, { groupId: app.group_id, actorId: auditActorId(actor), action: 'app.update', target: app.client_id, details, ip: actor.ip }, at);
    }),
  );
  if (callbackChanged) await endGrants();
  return { ...app, ...fields, updated_at: at };
}

/** A public client (a native or single-page application) has no secret: it uses PKCE instead. */
export function isPublic(app: Pick<apps.AppRow, 'client_type'>): boolean {
  return app.client_type === 'public';
}

export async function generateClientSecret(db: Knex, access: AppAccess, submission?: SubmissionKey): Promise<NewSecret> {
  requireGroupAction(access, 'manage-apps');
  const { actor, app } = access;
  if (isPublic(app)) throw new ConflictError('type', 'a public application has no client secret: it proves its codes with PKCE');
  return changing(db, [`app:${app.client_id}`], () => db.transaction(async (trx) => {
    await claimSubmission(trx, submission);
    // Counted inside the transaction, after locking the application row, so two requests at once cannot make a third.
    await apps.lockApp(trx, app.id);
    if ((await apps.countSecrets(trx, app.id)) >= MAX_ACTIVE_SECRETS) {
      throw new ConflictError('secret', `an application may hold at most ${MAX_ACTIVE_SECRETS} active secrets; revoke one first`);
    }
    const at = now();
    const secret = await addSecret(trx, app.id, at);
    await completeSubmission(trx, submission, secret.id);
    await recordAudit(trx, { groupId: app.group_id, actorId: auditActorId(actor), action: 'app.secret.create', target: app.client_id, details: { lastFour: secret.lastFour }, ip: actor.ip }, at);
    return secret;
  }));
}

/** Revokes one secret: from the next request on, on every instance, it no longer authenticates. */
export async function revokeClientSecret(db: Knex, access: AppAccess, secretId: number): Promise<void> {
  requireGroupAction(access, 'manage-apps');
  const { actor, app } = access;
  await changing(db, [`app:${app.client_id}`], () =>
    db.transaction(async (trx) => {
      const lastFour = await apps.deleteSecret(trx, app.id, secretId);
      if (lastFour === undefined) throw new NotFoundError('no such secret');
      await recordAudit(trx, { groupId: app.group_id, actorId: auditActorId(actor), action: 'app.secret.revoke', target: app.client_id, details: { lastFour }, ip: actor.ip }, now());
    }),
  );
}

/**
 * Deletes an application and revokes every code, access token and refresh token issued to it.
 * Grants are revoked before and again after the row goes: a code exchanged in between would
 * otherwise leave a token behind; once the row is gone no new one can be issued.
 */
export async function deleteApplication(db: Knex, provider: Provider, access: AppAccess): Promise<void> {
  requireGroupAction(access, 'manage-apps');
  const { actor, app } = access;
  const clientId = app.client_id;
  const revokeAll = async () => {
    for (const grantId of await grantIdsOfClient(db, clientId)) await revokeGrant(provider, grantId);
  };
  await revokeAll();
  const grantIds = await grantIdsOfClient(db, clientId);
  await changing(db, [`app:${clientId}`], () => db.transaction(async (trx) => {
    await apps.deleteApp(trx, app.id);
    await recordAudit(trx, { groupId: app.group_id, actorId: auditActorId(actor), action: 'app.delete', target: app.client_id, details: { name: app.name }, ip: actor.ip }, now());
  }));
  for (const grantId of grantIds) await revokeGrant(provider, grantId);
}

/** How many users have authorized an application and hold its grant. */
export function authorizedUsersOf(db: Knex, access: AppAccess): Promise<number> {
  requireGroupAction(access, 'manage-apps');
  return countGrantsOfClient(db, access.app.client_id);
}

/**
 * Revoke all user tokens: every user's grant of the application ends, with its codes, access
 * tokens and refresh tokens, and its listing (so each user is asked to consent again); the
 * application and its secrets stay. Returns how many grants ended. A grant listed while this
 * runs is not ended here: it was given after the owner asked.
 */
export async function revokeAllUserTokens(db: Knex, provider: Provider, access: AppAccess): Promise<number> {
  requireGroupAction(access, 'manage-apps');
  const { actor, app } = access;
  const grantIds = await grantIdsOfClient(db, app.client_id);
  await revokeGrants(db, provider, grantIds);
  await recordAudit(db, { groupId: app.group_id, actorId: auditActorId(actor), action: 'app.tokens.revoke', target: app.client_id, details: { grants: grantIds.length }, ip: actor.ip }, now());
  return grantIds.length;
}

/**
 * Ends grants in the token storage (SQL or Redis), then unlists each: storage first, so a failure
 * half-way leaves the rest listed and a second try finishes the work.
 */
export async function revokeGrants(db: Knex, provider: Provider, grantIds: readonly string[]): Promise<void> {
  for (const grantId of grantIds) {
    await revokeGrant(provider, grantId);
    await deleteUserGrantByGrantId(db, grantId);
  }
}

type ConsentSubject = { app: apps.AppRow; groupName: string };

const consentSubjects = new WeakMap<Knex, VersionedCache<ConsentSubject | undefined>>();

/**
 * The consent subjects of `db`'s process, cached under the application's version when it has Redis
 * (see `change-versions.ts`): an edit or deletion of the application, and a new name of its group,
 * replace it.
 */
function consentSubjectCache(db: Knex): VersionedCache<ConsentSubject | undefined> | undefined {
  let cache = consentSubjects.get(db);
  if (!cache) {
    cache = changeVersionsOf(db)?.cache((clientId) => apps.findAppWithGroupName(db, clientId));
    if (cache) consentSubjects.set(db, cache);
  }
  return cache;
}

/**
 * What the sign-in and consent pages of a flow show of an application: its fields and its group's
 * name; 404 once it is gone.
 */
export async function consentSubject(db: Knex, clientId: string): Promise<ConsentSubject> {
  const cache = consentSubjectCache(db);
  const found = !isClientId(clientId) ? undefined : cache ? await cache.get(clientId, [`app:${clientId}`]) : await apps.findAppWithGroupName(db, clientId);
  if (!found) throw new NotFoundError('this application no longer exists');
  return found;
}
