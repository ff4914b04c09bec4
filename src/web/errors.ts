import type { Context, Next } from 'koa';
import { AppError, RetryLaterError } from '../errors.js';
import { isStorageOutage, isValueError, VALUE_ERROR_MESSAGE } from '../storage.js';
import { render } from './render.js';

/** The one error handler of the pages: an exposed error becomes a page with its message; anything else a plain 500. */
export function webErrors(onFault: (err: unknown, ctx: Context) => void) {
  return async function renderErrors(ctx: Context, next: Next): Promise<void> {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) {
        render(ctx, 'error', { title: 'Page not found', message: 'There is nothing at this address.', status: 404 }, 404);
      }
    } catch (err) {
      if (err instanceof AppError) {
        if (err.status === 401) {
          // Only a page can be returned to; after a POST, go back to where forms start.
          const returnTo = ctx.method === 'GET' ? ctx.originalUrl : '/groups';
          ctx.redirect(`/login?return_to=${encodeURIComponent(returnTo)}`);
          return;
        }
        if (err instanceof RetryLaterError) ctx.set('Retry-After', String(err.retryAfterS));
        render(ctx, 'error', { title: titleFor(err.status), message: err.message, status: err.status }, err.status);
        return;
      }
      const status = (err as { status?: number; expose?: boolean }).expose ? (err as { status: number }).status : undefined;
      if (status && status < 500) {
        render(ctx, 'error', { title: titleFor(status), message: (err as Error).message, status }, status);
        return;
      }
      if (isValueError(err)) {
        ctx.state.log?.warn({ err }, 'the database refused a value');
        render(ctx, 'error', { title: titleFor(400), message: `The request could not be completed: ${VALUE_ERROR_MESSAGE}.`, status: 400 }, 400);
        return;
      }
      if (isStorageOutage(err)) {
        onFault(err, ctx);
        render(ctx, 'error', { title: 'Temporarily unavailable', message: 'Storage is unreachable right now. Try again in a moment.', status: 503 }, 503);
        return;
      }
      onFault(err, ctx);
      render(ctx, 'error', { title: 'Something went wrong', message: 'An unexpected error happened. It has been logged.', status: 500 }, 500);
    }
  };
}

function titleFor(status: number): string {
  switch (status) {
    case 400: return 'Bad request';
    case 403: return 'Not allowed';
    case 404: return 'Not found';
    case 409: return 'Conflict';
    case 413: return 'Too large';
    case 415: return 'Unsupported content type';
    case 429: return 'Too many requests';
    case 503: return 'Temporarily unavailable';
    default: return 'Error';
  }
}
