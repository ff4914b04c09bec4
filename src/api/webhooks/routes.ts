import Router from '@koa/router';
import type { Context } from 'koa';
import { z } from 'zod';
import { accessOf } from '../../http/load-group.js';
import { presentDelivery, presentWebhook } from '../../presenters/webhook.js';
import * as rules from '../../services/rules.js';
import {
  createWebhook,
  deleteWebhook,
  deliveryOfWebhook,
  deliveryPage,
  redeliver,
  updateWebhook,
  webhookOfGroup,
  webhooksOf,
  type WebhookDeps,
} from '../../services/webhooks/manage.js';
import { apiGroupLoader } from '../access.js';
import { requirePersonalTokenFor, requireScope } from '../auth.js';
import { parsePage, sendPage } from '../pagination.js';
import { idParam, jsonObject } from '../params.js';

/** A redelivery takes nothing: no body, or an empty object. */
export const redeliveryRequest = z.strictObject({});

/**
 * The webhooks of a group over /apis/v2, all with `groups:read-write`, for the group's owners: a
 * group the caller is not in is a 404, a member who is not an owner gets 403 (the `loadGroup`
 * step), before the body is read; a webhook or delivery of another group is a 404. Every change
 * (redelivering too) takes a personal access token: an OAuth token reads only.
 */
export function webhooksApi(deps: WebhookDeps & { issuer: string; realm: string }): Router {
  const { db, issuer } = deps;
  const router = new Router();
  const readWrite = requireScope('groups:read-write', deps.realm);
  const personal = requirePersonalTokenFor('creating, changing or deleting webhooks, or redelivering their events,');
  const loadGroup = apiGroupLoader(db);
  const manage = loadGroup('manage-webhooks');
  const hookId = (ctx: Context) => idParam(ctx, 'hookId');
  const deliveryId = (ctx: Context) => idParam(ctx, 'deliveryId', 'bigint');
  const hookUrl = (groupId: number, id: number) => `${issuer}/apis/v2/groups/${groupId}/webhooks/${id}`;

  router.get('/groups/:id/webhooks', readWrite, manage, async (ctx) => {
    const page = parsePage(ctx);
    // A group has a handful at most (MAX_WEBHOOKS_PER_GROUP): read whole, then cut to the page.
    const hooks = await webhooksOf(db, accessOf(ctx));
    sendPage(ctx, issuer, page, { total: hooks.length, items: hooks.slice(page.offset, page.offset + page.limit).map(presentWebhook) });
  });

  router.post('/groups/:id/webhooks', personal, readWrite, manage, async (ctx) => {
    const access = accessOf(ctx);
    const hook = await createWebhook(deps, access, jsonObject(ctx));
    ctx.status = 201;
    ctx.set('Location', hookUrl(access.group.id, hook.id));
    ctx.body = { data: presentWebhook(hook) };
  });

  router.get('/groups/:id/webhooks/:hookId', readWrite, manage, async (ctx) => {
    ctx.body = { data: presentWebhook(await webhookOfGroup(db, accessOf(ctx), hookId(ctx))) };
  });

  router.patch('/groups/:id/webhooks/:hookId', personal, readWrite, manage, async (ctx) => {
    ctx.body = { data: presentWebhook(await updateWebhook(deps, accessOf(ctx), hookId(ctx), jsonObject(ctx))) };
  });

  router.delete('/groups/:id/webhooks/:hookId', personal, readWrite, manage, async (ctx) => {
    await deleteWebhook(db, accessOf(ctx), hookId(ctx));
    ctx.status = 204;
  });

  router.get('/groups/:id/webhooks/:hookId/deliveries', readWrite, manage, async (ctx) => {
    const id = hookId(ctx);
    const page = parsePage(ctx);
    const { total, items } = await deliveryPage(db, accessOf(ctx), id, page);
    sendPage(ctx, issuer, page, { total, items: items.map(presentDelivery) });
  });

  router.get('/groups/:id/webhooks/:hookId/deliveries/:deliveryId', readWrite, manage, async (ctx) => {
    const id = hookId(ctx);
    ctx.body = { data: presentDelivery(await deliveryOfWebhook(db, accessOf(ctx), id, deliveryId(ctx))) };
  });

  // GitHub's "redeliver": the same event (X-Horizon-Delivery and body) sent again, as a new delivery.
  router.post('/groups/:id/webhooks/:hookId/deliveries/:deliveryId/attempts', personal, readWrite, manage, async (ctx) => {
    const access = accessOf(ctx);
    const id = hookId(ctx);
    const of = deliveryId(ctx);
    rules.parse(redeliveryRequest, jsonObject(ctx));
    const delivery = await redeliver(db, access, id, of);
    ctx.status = 202;
    ctx.set('Location', `${hookUrl(access.group.id, id)}/deliveries/${delivery.id}`);
    ctx.body = { data: presentDelivery(delivery) };
  });

  return router;
}
