import Router from '@koa/router';
import type { Knex } from 'knex';
import type Provider from 'oidc-provider';
import { deleteGroup } from '../../services/group-deletion.js';
import { presentGroup } from '../../presenters/group.js';
import { groupsOfUser } from '../../services/groups.js';
import { MAX_FILTER_LENGTH } from '../../services/rules.js';
import { accessOf } from '../../http/load-group.js';
import { apiGroupLoader } from '../access.js';
import { authOf, requireScope } from '../auth.js';
import { parsePage, sendPage } from '../pagination.js';
import { optionalQuery } from '../params.js';

export function groupsApi(deps: { db: Knex; provider: Provider; issuer: string; realm: string }): Router {
  const router = new Router();
  const readOnly = requireScope('groups:read-only', deps.realm);
  const readWrite = requireScope('groups:read-write', deps.realm);
  const loadGroup = apiGroupLoader(deps.db);

  router.get('/groups', readOnly, async (ctx) => {
    const page = parsePage(ctx);
    const filter = optionalQuery(ctx, 'filter', MAX_FILTER_LENGTH);
    const { total, items } = await groupsOfUser(deps.db, authOf(ctx).userId, { ...page, filter });
    sendPage(ctx, deps.issuer, page, { total, items: items.map((g) => presentGroup(g, g.role)) });
  });

  router.get('/groups/:id', readOnly, loadGroup('read'), (ctx) => {
    const { group, role } = accessOf(ctx);
    ctx.body = { data: presentGroup(group, role!) };
  });

  // Owners only: the group goes with its members, applications and their tokens.
  router.delete('/groups/:id', readWrite, loadGroup('delete-group'), async (ctx) => {
    await deleteGroup(deps.db, deps.provider, accessOf(ctx));
    ctx.status = 204;
  });

  return router;
}
