import Router from '@koa/router';
import { pageGroupsOfUser } from '../db/groups.js';
import { requireUser, type WebDeps } from './context.js';
import { render } from './render.js';

/** Groups pages: the list of mine, a new group, a group and its settings. */
export function groupRoutes(deps: WebDeps): Router {
  const router = new Router();
  router.get('/groups', async (ctx) => {
    const user = requireUser(ctx);
    const { items } = await pageGroupsOfUser(deps.db, user.id, { limit: 200, offset: 0 });
    render(ctx, 'groups/index', { title: 'Groups', groups: items });
  });
  return router;
}
