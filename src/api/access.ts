import type { Knex } from 'knex';
import type { Context, Next } from 'koa';
import { groupLoader } from '../http/load-group.js';
import { accessApplication } from '../services/apps.js';
import type { Actor } from '../services/context.js';
import { NO_GROUP } from '../services/groups.js';
import { authOf } from './auth.js';
import { idParam } from './params.js';

/** The API acts as the token's user. */
export function apiActor(ctx: Context): Actor {
  const auth = authOf(ctx);
  return {
    userId: auth.userId,
    ip: ctx.ip || null,
    ...(auth.personal ? { token: auth.personal } : {}),
    ...(auth.application ? { application: auth.application } : {}),
  };
}

/**
 * `loadGroup(action)` for `/groups/{id}/…`: a group the token's user is not a member of reads as
 * one that does not exist, whatever the action.
 */
export function apiGroupLoader(db: Knex) {
  return groupLoader({ db, actorOf: apiActor, refOf: (ctx) => ({ id: idParam(ctx, 'id') }), outsiders: 'hidden', notFound: NO_GROUP });
}

/** The step in front of `/oauth-apps/{clientID}…`: the application, for an owner of its group. */
export function loadApp(db: Knex) {
  return async function loadApp(ctx: Context, next: Next): Promise<void> {
    ctx.state.access = await accessApplication(db, apiActor(ctx), String(ctx.params.clientID ?? ''));
    await next();
  };
}
