import Router from '@koa/router';
import type { Context } from 'koa';
import { z } from 'zod';
import { accessOf } from '../../http/load-group.js';
import { presentResource, presentResourceWithSecret, resourceLinks } from '../../presenters/resource.js';
import {
  createResource,
  deleteResource,
  regenerateResourceSecret,
  resourceOfGroup,
  resourcesOf,
  updateResource,
  type Resource,
  type ResourceDeps,
} from '../../services/resources/manage.js';
import * as rules from '../../services/rules.js';
import { apiGroupLoader } from '../access.js';
import { requirePersonalTokenFor, requireScope } from '../auth.js';
import { parsePage, sendPage } from '../pagination.js';
import { idParam, jsonObject } from '../params.js';

/** A new introspection secret takes nothing: no body, or an empty object. */
export const newResourceSecretRequest = z.strictObject({});

/**
 * The resources of a group over /apis/v2 (the protected APIs its owners register, whose tokens
 * clients ask for with `resource=`), all with `groups:read-write`, for the group's owners: a group
 * the caller is not in is a 404, a member who is not an owner gets 403 (the `loadGroup` step),
 * before the body is read; a resource of another group is a 404. Every change takes a personal
 * access token: with an OAuth token an application could register a resource and take the tokens
 * meant for it, so an OAuth token reads only.
 */
export function resourcesApi(deps: ResourceDeps & { realm: string }): Router {
  const { db, issuer } = deps;
  const router = new Router();
  const readWrite = requireScope('groups:read-write', deps.realm);
  const personal = requirePersonalTokenFor('creating, changing or deleting resources, or replacing their secrets,');
  const manage = apiGroupLoader(db)('manage-resources');
  const resourceId = (ctx: Context) => idParam(ctx, 'resourceId');
  const resourceUrl = (groupId: number, id: number) => `${issuer}/apis/v2/groups/${groupId}/resources/${id}`;
  const present = (resource: Resource) => presentResource(resource, resourceLinks(issuer, resource.identifier));
  const presentWithSecret = (created: { resource: Resource; secret: string }) =>
    presentResourceWithSecret(created.resource, resourceLinks(issuer, created.resource.identifier), created.secret);

  router.get('/groups/:id/resources', readWrite, manage, async (ctx) => {
    const page = parsePage(ctx);
    // A group has a handful at most (MAX_RESOURCES_PER_GROUP): read whole, then cut to the page.
    const resources = await resourcesOf(db, accessOf(ctx));
    sendPage(ctx, issuer, page, { total: resources.length, items: resources.slice(page.offset, page.offset + page.limit).map(present) });
  });

  router.post('/groups/:id/resources', personal, readWrite, manage, async (ctx) => {
    const access = accessOf(ctx);
    const created = await createResource(deps, access, jsonObject(ctx));
    ctx.status = 201;
    ctx.set('Location', resourceUrl(access.group.id, created.resource.id));
    ctx.body = { data: presentWithSecret(created) };
  });

  router.get('/groups/:id/resources/:resourceId', readWrite, manage, async (ctx) => {
    ctx.body = { data: present(await resourceOfGroup(db, accessOf(ctx), resourceId(ctx))) };
  });

  router.patch('/groups/:id/resources/:resourceId', personal, readWrite, manage, async (ctx) => {
    ctx.body = { data: present(await updateResource(deps, accessOf(ctx), resourceId(ctx), jsonObject(ctx))) };
  });

  router.delete('/groups/:id/resources/:resourceId', personal, readWrite, manage, async (ctx) => {
    await deleteResource(db, accessOf(ctx), resourceId(ctx));
    ctx.status = 204;
  });

  // The old secret stops working at once: the server is given the new one in this answer only.
  router.post('/groups/:id/resources/:resourceId/secret', personal, readWrite, manage, async (ctx) => {
    const id = resourceId(ctx);
    rules.parse(newResourceSecretRequest, jsonObject(ctx));
    ctx.status = 201;
    ctx.body = { data: presentWithSecret(await regenerateResourceSecret(deps, accessOf(ctx), id)) };
  });

  return router;
}
