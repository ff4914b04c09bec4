import Router from '@koa/router';
import type { Knex } from 'knex';
import type { Context, Next } from 'koa';
import type Provider from 'oidc-provider';
import { z } from 'zod';
import { ForbiddenError } from '../../errors.js';
import { isSiteAdmin } from '../../policies/site.js';
import { exportedAuditEvent } from '../../presenters/audit.js';
import { presentClientRegistration } from '../../presenters/client-registration.js';
import { presentAdminUser } from '../../presenters/user.js';
import { disableUser, enableUser, findUsers, requireUserById, siteAuditEvents } from '../../services/admin.js';
import { clientRegistrationInput, clientRegistrationSettings, setClientRegistration } from '../../services/client-registration/settings.js';
import * as rules from '../../services/rules.js';
import { userById } from '../../services/users.js';
import { ADMIN_SCOPE } from '../../vocabulary.js';
import { apiActor } from '../access.js';
import { authOf, requireScope } from '../auth.js';
import { parsePage, sendPage } from '../pagination.js';
import { idParam, jsonObject, optionalQuery, parseQuery } from '../params.js';

/** The longest search `q` of the users list. */
export const MAX_USER_QUERY = 100;

/**
 * PUT /admin/client-registration: every switch, and the group as a path or null (none). The
 * service's rules, with null for no group where its form sends an empty box.
 */
export const clientRegistrationRequest = z.strictObject({
  metadataDocuments: clientRegistrationInput.shape.metadataDocuments,
  dynamicRegistration: clientRegistrationInput.shape.dynamicRegistration,
  group: z
    .string({ error: 'group must be the path of a group, or null' })
    .trim()
    .max(100, 'group must be at most 100 characters')
    .nullable()
    .describe('The path of the group such clients belong to, or null for none; a group is required while either switch is on'),
});

/** The message of a token whose owner is not (or no longer) a site administrator. */
export const NOT_SITE_ADMIN = "this request needs a site administrator's token: the token's owner is not a site administrator";

/**
 * The token's owner must be a site administrator now, not only when the token was made: an
 * administrator demoted or disabled since keeps a token with `admin` that opens nothing here.
 * Read from the database on every request (no cache to outlive a demotion).
 */
function requireSiteAdmin(db: Knex) {
  return async function siteAdminsOnly(ctx: Context, next: Next): Promise<void> {
    if (!isSiteAdmin(await userById(db, authOf(ctx).userId))) throw new ForbiddenError(NOT_SITE_ADMIN);
    await next();
  };
}

/**
 * `/admin/…`: what the Admin pages do, for a site administrator's personal access token with the
 * `admin` scope. The same services, so the same effects and the same audit trail.
 */
export function adminApi(deps: { db: Knex; provider: Provider; issuer: string; realm: string }): Router {
  const router = new Router({ prefix: '/admin' });
  router.use(requireScope(ADMIN_SCOPE, deps.realm), requireSiteAdmin(deps.db));

  router.get('/users', async (ctx) => {
    const page = parsePage(ctx);
    const q = optionalQuery(ctx, 'q', MAX_USER_QUERY);
    const { total, items } = await findUsers(deps.db, q ?? '', page);
    sendPage(ctx, deps.issuer, page, { total, items: items.map(presentAdminUser) }, { q });
  });

  router.post('/users/:id/disable', async (ctx) => {
    const user = await requireUserById(deps.db, idParam(ctx, 'id'));
    const { changed } = await disableUser(deps, apiActor(ctx), user);
    ctx.body = { data: presentAdminUser((await userById(deps.db, user.id)) ?? user), changed };
  });

  router.post('/users/:id/enable', async (ctx) => {
    const user = await requireUserById(deps.db, idParam(ctx, 'id'));
    const changed = await enableUser(deps.db, apiActor(ctx), user);
    ctx.body = { data: presentAdminUser((await userById(deps.db, user.id)) ?? user), changed };
  });

  router.get('/client-registration', async (ctx) => {
    ctx.body = { data: presentClientRegistration(await clientRegistrationSettings(deps.db), deps.issuer) };
  });

  router.put('/client-registration', async (ctx) => {
    const input = rules.parse(clientRegistrationRequest, jsonObject(ctx));
    const settings = await setClientRegistration(deps.db, apiActor(ctx), { ...input, group: input.group ?? '' });
    ctx.body = { data: presentClientRegistration(settings, deps.issuer) };
  });

  router.get('/audit-events', async (ctx) => {
    const page = parsePage(ctx);
    const filter = parseQuery(ctx, rules.auditQuery);
    const { total, items } = await siteAuditEvents(deps.db, filter, page);
    sendPage(ctx, deps.issuer, page, { total, items: items.map(exportedAuditEvent) }, auditFilterParams(ctx));
  });

  return router;
}

/** The filters as the request gave them, for the pages' links. */
export function auditFilterParams(ctx: Context): Record<string, string | undefined> {
  const given = (name: string) => (typeof ctx.query[name] === 'string' && ctx.query[name] ? (ctx.query[name] as string) : undefined);
  return { action: given('action'), since: given('since'), until: given('until') };
}
