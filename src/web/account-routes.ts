import Router from '@koa/router';
import { AppError } from '../errors.js';
import { authenticate, createUser } from '../services/users.js';
import { formFields, safeReturnTo, type WebDeps } from './context.js';
import { render } from './render.js';

/** Sign up, sign in, sign out. */
export function accountRoutes(deps: WebDeps): Router {
  const router = new Router();

  router.get('/', (ctx) => {
    if (ctx.state.user) return ctx.redirect('/groups');
    return ctx.redirect(deps.config.signup === 'open' ? '/signup' : '/login');
  });

  router.get('/login', (ctx) => {
    if (ctx.state.user) return ctx.redirect(safeReturnTo(ctx.query.return_to));
    render(ctx, 'login', { title: 'Sign in', action: '/login', returnTo: safeReturnTo(ctx.query.return_to) });
  });

  router.post('/login', async (ctx) => {
    const form = formFields(ctx);
    const user = await authenticate(deps.db, form.login ?? '', form.password ?? '');
    if (!user) {
      render(ctx, 'login', {
        title: 'Sign in',
        action: '/login',
        returnTo: safeReturnTo(form.return_to),
        values: { login: form.login ?? '' },
        errors: { login: 'Incorrect username, email or password.' },
      }, 401);
      return;
    }
    await deps.sessions.signIn(ctx, user.id);
    ctx.redirect(safeReturnTo(form.return_to));
  });

  router.get('/signup', (ctx) => {
    if (deps.config.signup !== 'open') throw new AppError(404, 'not_found', 'Sign-up is closed on this server. Ask an administrator for an account.');
    if (ctx.state.user) return ctx.redirect('/groups');
    render(ctx, 'signup', { title: 'Sign up' });
  });

  router.post('/signup', async (ctx) => {
    if (deps.config.signup !== 'open') throw new AppError(404, 'not_found', 'Sign-up is closed on this server. Ask an administrator for an account.');
    const form = formFields(ctx);
    const values = { username: form.username ?? '', email: form.email ?? '', name: form.name ?? '' };
    try {
      const user = await createUser(deps.db, { ...values, password: form.password ?? '' });
      await deps.sessions.signIn(ctx, user.id);
      ctx.redirect('/groups');
    } catch (err) {
      if (err instanceof AppError && err.field) {
        render(ctx, 'signup', { title: 'Sign up', values, errors: { [err.field]: err.message } }, err.status);
        return;
      }
      throw err;
    }
  });

  router.post('/logout', async (ctx) => {
    await deps.sessions.signOut(ctx);
    ctx.redirect('/login');
  });

  return router;
}
