import type { Context, Next } from 'koa';
import { z } from 'zod';
import { AppError, RetryLaterError } from '../errors.js';
import { isStorageOutage, isValueError, OUTAGE_RETRY_AFTER_S, VALUE_ERROR_MESSAGE } from '../storage.js';

/** Every failure of the API answers with this body. */
export const errorJson = z.object({ error: z.string(), error_description: z.string() });

/** The largest request body the API reads, in KiB. */
export const MAX_BODY_KIB = 64;

/** A bearer-authentication failure: carries the RFC 6750 WWW-Authenticate challenge. */
export class BearerError extends AppError {
  constructor(
    status: 401 | 403,
    code: string,
    message: string,
    readonly challenge: string,
  ) {
    super(status, code, message);
  }
}

/**
 * The one error handler of /apis/v2: every failure is `{error, error_description}` JSON, an
 * unknown route is a JSON 404, and nothing unexpected leaks (a plain 500, logged).
 */
export function apiErrors(onFault: (err: unknown, ctx: Context) => void) {
  return async function jsonErrors(ctx: Context, next: Next): Promise<void> {
    try {
      await next();
      // The router answers a method it has no routes for at all (TRACE, PROPFIND) with a text
      // 501; to a client it is the same mistake as PUT on a read-only path: a 405 naming what
      // the path allows, or a 404 where nothing is.
      if (ctx.status === 501 && !ctx.body) {
        ctx.status = ctx.response.get('Allow') ? 405 : 404;
        if (ctx.status === 404) ctx.remove('Allow');
      }
      if (ctx.status === 404 && ctx.body === undefined) {
        fail(ctx, 404, 'not_found', `no such endpoint: ${ctx.method} ${ctx.path}`);
      } else if (ctx.status === 405 && !ctx.body) {
        fail(ctx, 405, 'method_not_allowed', `${ctx.method} is not allowed here; allowed: ${ctx.response.get('Allow')}`);
      }
    } catch (err) {
      if (err instanceof BearerError) ctx.set('WWW-Authenticate', err.challenge);
      if (err instanceof RetryLaterError) ctx.set('Retry-After', String(err.retryAfterS));
      if (err instanceof AppError) return fail(ctx, err.status, err.code, err.message);
      const e = err as { status?: number; expose?: boolean; type?: string; message?: string };
      if (e.status === 413) return fail(ctx, 413, 'payload_too_large', `the request body must be at most ${MAX_BODY_KIB} KiB`);
      if (e.status === 415) return fail(ctx, 415, 'unsupported_media_type', 'the request body must be application/json');
      // The JSON body parser throws a SyntaxError with status 400 (and no `expose`) for malformed JSON or a JSON scalar.
      if (e.status === 400 && (e.expose || err instanceof SyntaxError)) {
        return fail(ctx, 400, 'invalid_request', 'the request body is not valid JSON, or not a JSON object');
      }
      if (isValueError(err)) {
        // Validation should have stopped it: worth a warning, but the request is what was wrong.
        ctx.state.log?.warn({ err }, 'the database refused a value');
        return fail(ctx, 400, 'invalid_request', VALUE_ERROR_MESSAGE);
      }
      if (isStorageOutage(err)) {
        onFault(err, ctx);
        ctx.set('Retry-After', String(OUTAGE_RETRY_AFTER_S));
        return fail(ctx, 503, 'temporarily_unavailable', 'storage is unreachable, try again shortly');
      }
      onFault(err, ctx);
      fail(ctx, 500, 'server_error', 'an unexpected error happened; it has been logged');
    }
  };
}

function fail(ctx: Context, status: number, error: string, description: string): void {
  ctx.status = status;
  ctx.set('Cache-Control', 'no-store');
  ctx.body = { error, error_description: description } satisfies z.infer<typeof errorJson>;
}
