import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import type Provider from 'oidc-provider';
import { ConflictError, NotFoundError } from '../errors.js';
import * as apps from '../db/apps.js';
import { grantIdsOfClient } from '../db/grants.js';
import { recordAudit } from '../db/audit.js';
import { now } from '../db/time.js';
import { digest, generateToken } from '../tokens.js';
import { auditActorId, type Actor } from './context.js';
import { revokeGrant } from './grants.js';
import { authorizeGroup } from './groups.js';
import * as rules from './rules.js';

export const MAX_ACTIVE_SECRETS = 2;

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

/** Creates an application of a group (owners only) with its first secret, shown to the caller once. */
export async function createApplication(
  db: Knex,
  actor: Actor,
  groupId: number,
  input: unknown,
): Promise<{ app: apps.AppRow; secret: NewSecret }> {
  await authorizeGroup(db, actor, groupId, 'manage-apps');
  const data = rules.parse(rules.newApplication, input);
  return db.transaction(async (trx) => {
    const at = now();
    const app = await apps.insertApp(trx, {
      client_id: randomBytes(10).toString('hex'),
      group_id: groupId,
      name: data.name,
      homepage_url: data.homepageURL,
      description: data.description,
      callback_url: data.callbackURL,
      sign_out_urls: apps.storedSignOutUrls(data.signOutRedirectURLs),
      created_by: auditActorId(actor),
      at,
    });
    const secret = await addSecret(trx, app.id, at);
    await recordAudit(trx, { groupId, actorId: auditActorId(actor), action: 'app.create', target: app.client_id, details: { name: app.name }, ip: actor.ip }, at);
    return { app, secret };
  });
}

/** Loads an application and checks that the actor owns its group; 404 for anyone who may not see it. */
export async function authorizeApplication(db: Knex, actor: Actor, clientId: string): Promise<apps.AppRow> {
  const app = await apps.findAppByClientId(db, clientId);
  if (!app) throw new NotFoundError('no such application');
  await authorizeGroup(db, actor, app.group_id, 'manage-apps');
  return app;
}

export async function updateApplication(db: Knex, actor: Actor, clientId: string, input: unknown): Promise<apps.AppRow> {
  const app = await authorizeApplication(db, actor, clientId);
  const data = rules.parse(rules.applicationChanges, input);
  const fields = {
    name: data.name ?? app.name,
    homepage_url: data.homepageURL ?? app.homepage_url,
    description: data.description ?? app.description,
    callback_url: data.callbackURL ?? app.callback_url,
    sign_out_urls: data.signOutRedirectURLs ? apps.storedSignOutUrls(data.signOutRedirectURLs) : app.sign_out_urls,
  };
  const at = now();
  await db.transaction(async (trx) => {
    await apps.updateApp(trx, app.id, { ...fields, at });
    await recordAudit(trx, { groupId: app.group_id, actorId: auditActorId(actor), action: 'app.update', target: app.client_id, details: data, ip: actor.ip }, at);
  });
  return { ...app, ...fields, updated_at: at };
}

export async function generateClientSecret(db: Knex, actor: Actor, clientId: string): Promise<NewSecret> {
  const app = await authorizeApplication(db, actor, clientId);
  return db.transaction(async (trx) => {
    // Counted inside the transaction, after locking the application row, so two requests at once cannot make a third.
    await apps.lockApp(trx, app.id);
    if ((await apps.countSecrets(trx, app.id)) >= MAX_ACTIVE_SECRETS) {
      throw new ConflictError('secret', `an application may hold at most ${MAX_ACTIVE_SECRETS} active secrets; revoke one first`);
    }
    const at = now();
    const secret = await addSecret(trx, app.id, at);
    await recordAudit(trx, { groupId: app.group_id, actorId: auditActorId(actor), action: 'app.secret.create', target: app.client_id, details: { lastFour: secret.lastFour }, ip: actor.ip }, at);
    return secret;
  });
}

/** Revokes one secret: from the next request on, on every instance, it no longer authenticates. */
export async function revokeClientSecret(db: Knex, actor: Actor, clientId: string, secretId: number): Promise<void> {
  const app = await authorizeApplication(db, actor, clientId);
  await db.transaction(async (trx) => {
    if ((await apps.deleteSecret(trx, app.id, secretId)) === 0) throw new NotFoundError('no such secret');
    await recordAudit(trx, { groupId: app.group_id, actorId: auditActorId(actor), action: 'app.secret.revoke', target: app.client_id, details: { secretId }, ip: actor.ip }, now());
  });
}

/**
 * Deletes an application and revokes every code, access token and refresh token issued to it.
 * Grants are revoked before and again after the row goes: a code exchanged in between would
 * otherwise leave a token behind; once the row is gone no new one can be issued.
 */
export async function deleteApplication(db: Knex, provider: Provider, actor: Actor, clientId: string): Promise<void> {
  const app = await authorizeApplication(db, actor, clientId);
  const revokeAll = async () => {
    for (const grantId of await grantIdsOfClient(db, clientId)) await revokeGrant(provider, grantId);
  };
  await revokeAll();
  const grantIds = await grantIdsOfClient(db, clientId);
  await db.transaction(async (trx) => {
    await apps.deleteApp(trx, app.id);
    await recordAudit(trx, { groupId: app.group_id, actorId: auditActorId(actor), action: 'app.delete', target: app.client_id, details: { name: app.name }, ip: actor.ip }, now());
  });
  for (const grantId of grantIds) await revokeGrant(provider, grantId);
}
