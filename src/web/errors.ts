import type { Context, Next } from 'koa';
import { AppError, RetryLaterError } from '../errors.js';
import { signedInUserById } from '../services/users.js';
import { isStorageOutage, isValueError, OUTAGE_RETRY_AFTER_S, VALUE_ERROR_MESSAGE } from '../storage.js';
import { returnToQuery, type WebDeps } from './context.js';
import { errorsInEnglish as en } from '../error-page.js';
import { render as renderView } from './render.js';

/** What reading the signed-in user needs; without it (a bare handler in a test) the header stays signed out. */
type SignedInDeps = Partial<Pick<WebDeps, 'db' | 'sessions'>>;

/**
 * The one error handler of the pages: an exposed error becomes a page with its message; anything
 * else a plain 500. Every error page shows the header of the person signed in, even when the
 * error came before their session was read (a refused form token, say).
 */
export function webErrors(onFault: (err: unknown, ctx: Context) => void, deps: SignedInDeps = {}) {
  const render = async (ctx: Context, view: 'error', locals: { title: string; message: string; status: number }, status: number) => {
    await withSignedInUser(ctx, deps);
    renderView(ctx, view, locals, status);
  };
  return async function renderErrors(ctx: Context, next: Next): Promise<void> {
    try {
      await next();
      if (ctx.body === undefined && (ctx.status === 404 || ctx.status === 405)) await unanswered(ctx, deps);
    } catch (err) {
      if (err instanceof AppError) {
        if (err.status === 401) {
          // Only a page can be returned to; after a POST, go back to where forms start. An address
          // the sign-in page would not take back (too long) is not carried: encoded once more, it
          // made a Location header larger than clients and proxies read.
          const returnTo = ctx.method === 'GET' ? ctx.originalUrl : '/groups';
          ctx.redirect(`/login${returnToQuery(returnTo)}`);
          return;
        }
        if (err instanceof RetryLaterError) ctx.set('Retry-After', String(err.retryAfterS));
        await render(ctx, 'error', { title: titleFor(err.status), message: err.message, status: err.status }, err.status);
        return;
      }
      const status = (err as { status?: number; expose?: boolean }).expose ? (err as { status: number }).status : undefined;
      if (status && status < 500) {
        await render(ctx, 'error', { title: titleFor(status), message: (err as Error).message, status }, status);
        return;
      }
      if (isValueError(err)) {
        ctx.state.log?.warn({ err }, 'the database refused a value');
        await render(ctx, 'error', { title: titleFor(400), message: `The request could not be completed: ${VALUE_ERROR_MESSAGE}.`, status: 400 }, 400);
        return;
      }
      if (isStorageOutage(err)) {
        onFault(err, ctx);
        // Storage is away: the session cannot be read either, so the header stays as it is.
        ctx.set('Retry-After', String(OUTAGE_RETRY_AFTER_S));
        renderView(ctx, 'error', { title: en('unavailable'), message: en('storageAway'), status: 503 }, 503);
        return;
      }
      onFault(err, ctx);
      await render(ctx, 'error', { title: en('somethingWrong'), message: en('unexpected'), status: 500 }, 500);
    }
  };
}

/**
 * The site's page for a request no route answered: 404, or 405 (with `Allow`) for a page's
 * address asked with a method it does not take. Used for the pages and for every path that falls
 * through to the OAuth provider, so no address answers a bare text "Not Found".
 */
export async function unanswered(ctx: Context, deps: SignedInDeps, allowed: string[] = []): Promise<void> {
  await withSignedInUser(ctx, deps);
  if (allowed.length) ctx.set('Allow', allowed.join(', '));
  if (ctx.status === 405 || allowed.length) {
    renderView(ctx, 'error', { title: en('methodNotAllowed'), message: en('methodNotTaken', { method: ctx.method }), status: 405 }, 405);
    return;
  }
  renderView(ctx, 'error', { title: en('pageNotFound'), message: en('nothingHere'), status: 404 }, 404);
}

/** Reads the signed-in user for the header when the page steps have not (yet); a failed lookup leaves it signed out. */
async function withSignedInUser(ctx: Context, deps: SignedInDeps): Promise<void> {
  if (ctx.state.user || !deps.db || !deps.sessions) return;
  try {
    const accountId = await deps.sessions.accountId(ctx);
    ctx.state.user = accountId ? await signedInUserById(deps.db, accountId) : undefined;
  } catch {
    ctx.state.user = undefined;
  }
}

function titleFor(status: number): string {
  return en(TITLES[status] ?? 'error');
}

/** The title of each status's page (`errors:sentences`); any other status is an "Error". */
const TITLES: Record<number, string> = {
  400: 'badRequest',
  403: 'notAllowed',
  404: 'notFound',
  405: 'methodNotAllowed',
  409: 'conflict',
  413: 'tooLarge',
  415: 'unsupportedType',
  429: 'tooManyRequests',
  503: 'unavailable',
};
