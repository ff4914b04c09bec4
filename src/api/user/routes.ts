import Router from '@koa/router';
import type { Knex } from 'knex';
import { userById } from '../../services/users.js';
import { AppError } from '../../errors.js';
import { BearerError } from '../errors.js';
import { userFieldsFor } from '../../policies/user-fields.js';
import { presentApiUser } from '../../presenters/user.js';
import { authOf, requireScope } from '../auth.js';

/** Why `/user` refuses a token an application got for itself. */
export const APPLICATION_HAS_NO_USER = 'this token was issued to an application acting as itself (client credentials grant): it has no user. /user answers only for a token issued for a person';

export function userApi(deps: { db: Knex; realm: string }): Router {
  const router = new Router();

  router.get('/user', requireScope('any', deps.realm), async (ctx) => {
    const auth = authOf(ctx);
    if (auth.application) throw new AppError(403, 'no_user', APPLICATION_HAS_NO_USER);
    const user = await userById(deps.db, auth.userId);
    if (!user) {
      throw new BearerError(401, 'invalid_token', 'the token\'s user no longer exists', `Bearer realm="${deps.realm}", error="invalid_token"`);
    }
    // What the scopes the person consented to allow (a personal token is the person's own).
    ctx.body = { data: presentApiUser(user, userFieldsFor(auth)) };
  });

  return router;
}
