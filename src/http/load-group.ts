import type { Knex } from 'knex';
import type { Context, Middleware, Next } from 'koa';
import { NotFoundError } from '../errors.js';
import type { GroupAction } from '../policies/group.js';
import type { Actor } from '../services/context.js';
import { accessGroup, type GroupAccess, type GroupRef, type Outsiders } from '../services/groups.js';

export interface GroupLoaderOptions {
  db: Knex;
  /** Who is asking: the page's signed-in user, or the API token's. */
  actorOf(ctx: Context): Actor;
  /** The group the route's path names; undefined when the path could not name one. */
  refOf(ctx: Context): GroupRef | undefined;
  /** What a group the actor is not a member of looks like on this surface. */
  outsiders: Outsiders;
  /** This surface's words for "no such group" (a page's sentence, the API's message). */
  notFound: string;
}

/**
 * The step in front of every group route of the pages and the API: `loadGroup(action)` loads
 * the group of the path and the actor's role in it, applies the access rule of
 * `services/groups.ts#accessGroup` (404 for a group one cannot see, 403 for an action one's role
 * does not allow), and hands the handler the result through `accessOf(ctx)`.
 */
export function groupLoader(options: GroupLoaderOptions): (action: GroupAction) => Middleware {
  return (action) =>
    async function loadGroup(ctx: Context, next: Next): Promise<void> {
      const actor = options.actorOf(ctx);
      const ref = options.refOf(ctx);
      if (!ref) throw new NotFoundError(options.notFound);
      try {
        ctx.state.access = await accessGroup(options.db, actor, ref, action, options.outsiders);
      } catch (err) {
        throw err instanceof NotFoundError ? new NotFoundError(options.notFound) : err;
      }
      await next();
    };
}

/** The group access a `loadGroup` step in front of this route established. */
export function accessOf<T extends GroupAccess = GroupAccess>(ctx: Context): T {
  const access = ctx.state.access as T | undefined;
  if (!access) throw new Error(`${ctx.method} ${ctx.path}: a group route without a loadGroup step`);
  return access;
}
