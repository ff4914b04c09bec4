import type { Context, Next } from 'koa';
import { isStorageOutage, isValueError, OUTAGE_RETRY_AFTER_S, VALUE_ERROR_MESSAGE } from '../storage.js';

type RenderError = (ctx: Context, status: number, title: string, message: string) => void;

/**
 * The library answers any fault inside a route with 500 server_error (and emits `server_error`,
 * whose listener records the fault in `ctx.state.providerFault`); a fault in one of our own
 * pre-steps escapes its routes altogether. This outermost step gives both the honest answer:
 * storage unreachable → 503 temporarily_unavailable (the client may retry); a value the database
 * refused → 400 invalid_request (the request was wrong); anything else → 500 server_error.
 * JSON, or the error page for a browser's GET.
 */
export function providerFaults(renderError: RenderError, onFault: (err: unknown) => void) {
  return async function honestFaults(ctx: Context, next: Next): Promise<void> {
    try {
      await next();
    } catch (err) {
      ctx.state.providerFault = err;
      if (!isValueError(err)) onFault(err);
    }
    const fault: unknown = ctx.state.providerFault;
    if (fault === undefined || ctx.headerSent) return;
    if (isStorageOutage(fault)) {
      answer(ctx, renderError, 503, 'temporarily_unavailable', 'storage is unreachable; try again shortly', 'Temporarily unavailable');
      ctx.set('Retry-After', String(OUTAGE_RETRY_AFTER_S));
    } else if (isValueError(fault)) {
      answer(ctx, renderError, 400, 'invalid_request', VALUE_ERROR_MESSAGE, 'The request could not be completed');
    } else {
      answer(ctx, renderError, 500, 'server_error', 'an unexpected error happened; it has been logged', 'Something went wrong');
    }
  };
}

/** Records a fault the library's own handler answered, for honestFaults to correct. */
export function recordProviderFault(ctx: Context, err: unknown, onFault: (err: unknown) => void): void {
  ctx.state.providerFault = err;
  if (!isValueError(err)) onFault(err);
}

function answer(ctx: Context, renderError: RenderError, status: number, error: string, description: string, title: string): void {
  if (ctx.accepts('json', 'html') === 'html' && ctx.method === 'GET') {
    renderError(ctx, status, title, description);
  } else {
    ctx.type = 'json';
    ctx.body = { error, error_description: description };
  }
  ctx.status = status;
  ctx.set('Cache-Control', 'no-store');
}
