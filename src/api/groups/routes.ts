import Router from '@koa/router';
import type { Knex } from 'knex';
import type Provider from 'oidc-provider';
import { deleteGroup } from '../../services/group-deletion.js';
import { presentGroup } from '../../presenters/group.js';
import { groupAuditEvents, groupById, groupsOfApplication, groupsOfUser, leaveGroup, removeMember, updateGroupSettings } from '../../services/groups.js';
import { exportedAuditEvent } from '../../presenters/audit.js';
import { auditFilterParams } from '../admin/routes.js';
import * as rules from '../../services/rules.js';
import { idParam, jsonObject } from '../params.js';
import { accessOf } from '../../http/load-group.js';
import { apiGroupLoader } from '../access.js';
import { authOf, requireScope } from '../auth.js';
import { parsePage, sendPage } from '../pagination.js';
import { optionalQuery, parseQuery } from '../params.js';
import { z } from 'zod';
import { maxLifetimeDays } from '../../policies/token-lifetime.js';

/** An edit of a group's settings names only the fields it changes; an unknown field is an error. */
export const groupChanges = z.strictObject({
  name: rules.name.optional(),
  description: rules.description.unwrap().optional(),
  visibilityLevel: rules.visibilityLevel.optional(),
  requireTwoFactor: z.boolean({ error: 'requireTwoFactor must be true or false' }).optional(),
  personalTokenMaxLifetimeDays: maxLifetimeDays.optional(),
});

export function groupsApi(deps: { db: Knex; provider: Provider; issuer: string; realm: string }): Router {
  const router = new Router();
  const readOnly = requireScope('groups:read-only', deps.realm);
  const readWrite = requireScope('groups:read-write', deps.realm);
  const loadGroup = apiGroupLoader(deps.db);

  router.get('/groups', readOnly, async (ctx) => {
    const page = parsePage(ctx);
    const filter = optionalQuery(ctx, 'filter', rules.MAX_FILTER_LENGTH);
    const auth = authOf(ctx);
    // An application acting as itself is in its own group only.
    const { total, items } = auth.application
      ? await groupsOfApplication(deps.db, auth.application.groupId, { ...page, filter })
      : await groupsOfUser(deps.db, auth.userId, { ...page, filter }, auth.personal);
    sendPage(ctx, deps.issuer, page, { total, items: items.map((g) => presentGroup(g, g.role)) }, { filter });
  });

  router.get('/groups/:id', readOnly, loadGroup('read'), (ctx) => {
    const { group, role } = accessOf(ctx);
    ctx.body = { data: presentGroup(group, role!) };
  });

  // The group's audit log, as its Audit log page shows it (owners and maintainers).
  router.get('/groups/:id/audit-events', readOnly, loadGroup('read-audit'), async (ctx) => {
    const page = parsePage(ctx);
    const filter = parseQuery(ctx, rules.auditQuery);
    const { total, items } = await groupAuditEvents(deps.db, accessOf(ctx), filter, page);
    sendPage(ctx, deps.issuer, page, { total, items: items.map(exportedAuditEvent) }, auditFilterParams(ctx));
  });

  // Owners only: fields left out keep their value.
  router.patch('/groups/:id', readWrite, loadGroup('manage-settings'), async (ctx) => {
    const access = accessOf(ctx);
    const { group, role } = access;
    const changes = rules.parse(groupChanges, jsonObject(ctx));
    await updateGroupSettings(deps.db, access, {
      name: changes.name ?? group.name,
      description: changes.description ?? group.description,
      visibilityLevel: changes.visibilityLevel ?? group.visibility_level,
      requireTwoFactor: changes.requireTwoFactor,
      personalTokenMaxLifetimeDays: changes.personalTokenMaxLifetimeDays,
    });
    const updated = await groupById(deps.db, group.id);
    ctx.body = { data: presentGroup(updated ?? group, role!) };
  });

  // Owners only: the group goes with its members, applications and their tokens.
  router.delete('/groups/:id', readWrite, loadGroup('delete-group'), async (ctx) => {
    await deleteGroup(deps.db, deps.provider, accessOf(ctx));
    ctx.status = 204;
  });

  // One's own id: leaving the group (any role; not its last owner). Another's: removing them, as
  // the Members page does (owners; maintainers too, for members and maintainers).
  router.delete('/groups/:id/members/:userId', readWrite, loadGroup('read'), async (ctx) => {
    const access = accessOf(ctx);
    const userId = idParam(ctx, 'userId');
    if (userId === access.actor.userId) await leaveGroup(deps.db, access);
    else await removeMember(deps.db, access, userId);
    ctx.status = 204;
  });

  return router;
}
