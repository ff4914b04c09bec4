import Router from '@koa/router';
import type { Knex } from 'knex';
import type { Context } from 'koa';
import type Provider from 'oidc-provider';
import { findAppByClientId, listSecrets, pageAppsOfGroup } from '../../db/apps.js';
import { NotFoundError, ValidationError } from '../../errors.js';
import { isClientId } from '../../ids.js';
import { presentApp, presentAppWithSecrets } from '../../presenters/app.js';
import {
  authorizeApplication,
  createApplication,
  deleteApplication,
  generateClientSecret,
  revokeClientSecret,
  updateApplication,
} from '../../services/apps.js';
import type { Actor } from '../../services/context.js';
import { authorizeGroup } from '../../services/groups.js';
import * as rules from '../../services/rules.js';
import { authOf, requireScope } from '../auth.js';
import { parsePage, sendPage } from '../pagination.js';
import { idParam } from '../params.js';

const NO_GROUP = 'no such group, or you are not a member of it';
const NO_APP = 'no such application, or you are not a member of its group';

/**
 * The OAuth applications of a group over /apis/v2, all with `groups:read-write`. Whether the
 * caller may see a group (a member: else 404) is asked first; whether they may manage its
 * applications (an owner: else 403) is the services' own check, the same one the pages use.
 */
export function appsApi(deps: { db: Knex; provider: Provider; issuer: string; realm: string }): Router {
  const { db, provider } = deps;
  const router = new Router();
  const readWrite = requireScope('groups:read-write', deps.realm);

  const actorOf = (ctx: Context): Actor => ({ userId: authOf(ctx).userId, ip: ctx.ip || null });

  /** A group the caller is not a member of reads as one that does not exist. */
  async function visibleGroup(ctx: Context, groupId: number): Promise<void> {
    try {
      await authorizeGroup(db, actorOf(ctx), groupId, 'read');
    } catch (err) {
      if (err instanceof NotFoundError) throw new NotFoundError(NO_GROUP);
      throw err;
    }
  }

  /** The `{clientID}` of the path, once it names an application of a group the caller belongs to. */
  async function visibleApp(ctx: Context): Promise<string> {
    const clientId = String(ctx.params.clientID ?? '');
    const app = isClientId(clientId) ? await findAppByClientId(db, clientId) : undefined;
    if (!app) throw new NotFoundError(NO_APP);
    try {
      await authorizeGroup(db, actorOf(ctx), app.group_id, 'read');
    } catch (err) {
      if (err instanceof NotFoundError) throw new NotFoundError(NO_APP);
      throw err;
    }
    return app.client_id;
  }

  router.get('/groups/:id/oauth-apps', readWrite, async (ctx) => {
    const groupId = idParam(ctx, 'id');
    const page = parsePage(ctx);
    await visibleGroup(ctx, groupId);
    await authorizeGroup(db, actorOf(ctx), groupId, 'manage-apps');
    const { total, items } = await pageAppsOfGroup(db, groupId, page);
    sendPage(ctx, deps.issuer, page, { total, items: items.map((app) => presentApp(app)) });
  });

  router.post('/groups/:id/oauth-apps', readWrite, async (ctx) => {
    const groupId = idParam(ctx, 'id');
    const body = jsonObject(ctx);
    await visibleGroup(ctx, groupId);
    const { app, secret } = await createApplication(db, actorOf(ctx), groupId, body);
    ctx.status = 201;
    ctx.set('Location', `${deps.issuer}/apis/v2/oauth-apps/${encodeURIComponent(app.client_id)}`);
    ctx.set('Cache-Control', 'no-store');
    const secrets = [{ id: secret.id, last_four: secret.lastFour, created_at: secret.createdAt, last_used_at: null }];
    ctx.body = { data: presentAppWithSecrets(app, secrets, secret) };
  });

  router.get('/oauth-apps/:clientID', readWrite, async (ctx) => {
    const app = await authorizeApplication(db, actorOf(ctx), await visibleApp(ctx));
    ctx.body = { data: presentAppWithSecrets(app, await listSecrets(db, app.id)) };
  });

  router.patch('/oauth-apps/:clientID', readWrite, async (ctx) => {
    const body = jsonObject(ctx);
    const app = await updateApplication(db, actorOf(ctx), await visibleApp(ctx), body);
    ctx.body = { data: presentAppWithSecrets(app, await listSecrets(db, app.id)) };
  });

  router.delete('/oauth-apps/:clientID', readWrite, async (ctx) => {
    await deleteApplication(db, provider, actorOf(ctx), await visibleApp(ctx));
    ctx.status = 204;
  });

  router.post('/oauth-apps/:clientID/secrets', readWrite, async (ctx) => {
    rules.parse(rules.newSecret, jsonObject(ctx));
    const secret = await generateClientSecret(db, actorOf(ctx), await visibleApp(ctx));
    ctx.status = 201;
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { data: { id: secret.id, secret: secret.secret, lastFour: secret.lastFour, createdAt: secret.createdAt } };
  });

  router.delete('/oauth-apps/:clientID/secrets/:secretID', readWrite, async (ctx) => {
    const secretId = idParam(ctx, 'secretID');
    await revokeClientSecret(db, actorOf(ctx), await visibleApp(ctx), secretId);
    ctx.status = 204;
  });

  return router;
}

/** The parsed JSON body as an object (no body at all is `{}`); an array or a scalar is a 400. */
function jsonObject(ctx: Context): Record<string, unknown> {
  const body = (ctx.request as { body?: unknown }).body;
  if (body === undefined) return {};
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new ValidationError('body', 'the request body must be a JSON object');
  }
  return body as Record<string, unknown>;
}
