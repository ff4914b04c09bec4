import Router from '@koa/router';
import type { Knex } from 'knex';
import type { Context } from 'koa';
import type Provider from 'oidc-provider';
import { accessOf } from '../../http/load-group.js';
import { presentApp, presentAppWithSecrets } from '../../presenters/app.js';
import {
  applicationsOf,
  createApplication,
  authorizedUsersOf,
  deleteApplication,
  generateClientSecret,
  revokeAllUserTokens,
  revokeClientSecret,
  secretsOf,
  updateApplication,
  type AppAccess,
} from '../../services/apps.js';
import * as rules from '../../services/rules.js';
import { apiGroupLoader, loadApp } from '../access.js';
import { requirePersonalToken, requireScope } from '../auth.js';
import { parsePage, sendPage } from '../pagination.js';
import { idParam, jsonObject } from '../params.js';



/**
 * The OAuth applications of a group over /apis/v2, all with `groups:read-write`, for the
 * group's owners: a group or application of a group the caller is not in is a 404, a member
 * who is not an owner gets 403 (the `loadGroup` and `loadApp` steps), before the body is read.
 * Every change takes a personal access token (`personal`): an OAuth token reads only.
 */
export function appsApi(deps: { db: Knex; provider: Provider; issuer: string; realm: string }): Router {
  const { db, provider } = deps;
  const router = new Router();
  const readWrite = requireScope('groups:read-write', deps.realm);
  const personal = requirePersonalToken;
  const loadGroup = apiGroupLoader(db);
  const app = loadApp(db);
  const appAccess = (ctx: Context) => accessOf<AppAccess>(ctx);
  /** One application as reads show it: its secrets masked and how many users have authorized it. */
  const appWithSecrets = async (access: AppAccess) => ({
    ...presentAppWithSecrets(access.app, await secretsOf(db, access)),
    authorizedUsers: await authorizedUsersOf(db, access),
  });

  router.get('/groups/:id/oauth-apps', readWrite, loadGroup('manage-apps'), async (ctx) => {
    const page = parsePage(ctx);
    const { total, items } = await applicationsOf(db, accessOf(ctx), page);
    sendPage(ctx, deps.issuer, page, { total, items: items.map((a) => presentApp(a)) });
  });

  router.post('/groups/:id/oauth-apps', personal, readWrite, loadGroup('manage-apps'), async (ctx) => {
    const { app: created, secret } = await createApplication(db, accessOf(ctx), jsonObject(ctx));
    ctx.status = 201;
    ctx.set('Location', `${deps.issuer}/apis/v2/oauth-apps/${encodeURIComponent(created.client_id)}`);
    ctx.set('Cache-Control', 'no-store');
    const secrets = secret ? [{ id: secret.id, last_four: secret.lastFour, created_at: secret.createdAt, last_used_at: null }] : [];
    ctx.body = { data: presentAppWithSecrets(created, secrets, secret) };
  });

  router.get('/oauth-apps/:clientID', readWrite, app, async (ctx) => {
    ctx.body = { data: await appWithSecrets(appAccess(ctx)) };
  });

  router.patch('/oauth-apps/:clientID', personal, readWrite, app, async (ctx) => {
    const access = appAccess(ctx);
    const updated = await updateApplication(db, provider, access, jsonObject(ctx));
    ctx.body = { data: await appWithSecrets({ ...access, app: updated }) };
  });

  router.delete('/oauth-apps/:clientID', personal, readWrite, app, async (ctx) => {
    await deleteApplication(db, provider, appAccess(ctx));
    ctx.status = 204;
  });

  // GitHub's "Revoke all user tokens": every user's grant ends; the application and its secrets stay.
  router.delete('/oauth-apps/:clientID/grants', personal, readWrite, app, async (ctx) => {
    await revokeAllUserTokens(db, provider, appAccess(ctx));
    ctx.status = 204;
  });

  router.post('/oauth-apps/:clientID/secrets', personal, readWrite, app, async (ctx) => {
    rules.parse(rules.newSecret, jsonObject(ctx));
    const secret = await generateClientSecret(db, appAccess(ctx));
    ctx.status = 201;
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { data: { id: secret.id, secret: secret.secret, lastFour: secret.lastFour, createdAt: secret.createdAt } };
  });

  router.delete('/oauth-apps/:clientID/secrets/:secretID', personal, readWrite, app, async (ctx) => {
    await revokeClientSecret(db, appAccess(ctx), idParam(ctx, 'secretID'));
    ctx.status = 204;
  });

  return router;
}
