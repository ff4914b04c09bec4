import Router from '@koa/router';
import type { Knex } from 'knex';
import { findGroupOfUser, pageGroupsOfUser } from '../../db/groups.js';
import { NotFoundError } from '../../errors.js';
import { presentGroup } from '../../presenters/group.js';
import { MAX_FILTER_LENGTH } from '../../services/rules.js';
import { authOf, requireScope } from '../auth.js';
import { parsePage, sendPage } from '../pagination.js';
import { idParam, optionalQuery } from '../params.js';

export function groupsApi(deps: { db: Knex; issuer: string; realm: string }): Router {
  const router = new Router();
  const readOnly = requireScope('groups:read-only', deps.realm);

  router.get('/groups', readOnly, async (ctx) => {
    const page = parsePage(ctx);
    const filter = optionalQuery(ctx, 'filter', MAX_FILTER_LENGTH);
    const { total, items } = await pageGroupsOfUser(deps.db, authOf(ctx).userId, { ...page, filter });
    sendPage(ctx, deps.issuer, page, { total, items: items.map((g) => presentGroup(g, g.role)) });
  });

  router.get('/groups/:id', readOnly, async (ctx) => {
    const group = await findGroupOfUser(deps.db, authOf(ctx).userId, idParam(ctx, 'id'));
    if (!group) throw new NotFoundError('no such group, or you are not a member of it');
    ctx.body = { data: presentGroup(group, group.role) };
  });

  return router;
}
