import Router from '@koa/router';
import type { Knex } from 'knex';
import { userById } from '../../services/users.js';
import { BearerError } from '../errors.js';
import { presentUser } from '../../presenters/user.js';
import { authOf, requireScope } from '../auth.js';

export function userApi(deps: { db: Knex; realm: string }): Router {
  const router = new Router();

  router.get('/user', requireScope('any', deps.realm), async (ctx) => {
    const auth = authOf(ctx);
    const user = await userById(deps.db, auth.userId);
    if (!user) {
      throw new BearerError(401, 'invalid_token', 'the token\'s user no longer exists', `Bearer realm="${deps.realm}", error="invalid_token"`);
    }
    // An OAuth token shows the email only when the user granted the email scope; a personal token is the user's own.
    const email = auth.kind === 'personal' || auth.scopes.has('email');
    const { createdAt: _createdAt, ...rest } = presentUser(user, { email });
    ctx.body = { data: rest };
  });

  return router;
}
