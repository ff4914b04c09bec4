import type { Context, Next } from 'koa';

/**
 * An answer given before the request body was read (413, 415, 401, 421, 429 …) must leave a
 * keep-alive connection usable: the unread rest of the body is read and dropped after the answer,
 * so the client's next request on the same connection is parsed from its first byte. A body too
 * large to be worth draining (or of unknown length) gets `Connection: close` instead, and the
 * client opens a new connection for its next request.
 */
const DRAIN_LIMIT = 1024 * 1024;

function hasBody(ctx: Context): boolean {
  const length = ctx.req.headers['content-length'];
  return (length !== undefined && length !== '0') || ctx.req.headers['transfer-encoding'] !== undefined;
}

export async function keepConnectionUsable(ctx: Context, next: Next): Promise<void> {
  try {
    await next();
  } finally {
    const { req } = ctx;
    if (!req.complete && !req.destroyed && hasBody(ctx)) {
      const declared = Number(req.headers['content-length']);
      if (!(Number.isSafeInteger(declared) && declared <= DRAIN_LIMIT) && !ctx.headerSent) ctx.set('Connection', 'close');
      // Flowing with no reader: the bytes are pulled off the wire and dropped.
      req.resume();
    }
  }
}
