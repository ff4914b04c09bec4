import { Readable } from 'node:stream';
import type { Context } from 'koa';

/** The media type of newline-delimited JSON: one JSON value a line. */
export const NDJSON = 'application/x-ndjson';

/**
 * Answers with a download of newline-delimited JSON: each item of each batch one line, written
 * as the batches are read, so a long log never sits in memory whole. `filename` is the name the
 * browser saves it under (ASCII letters, digits, dots and dashes only).
 */
export async function sendNdjson<T>(ctx: Context, filename: string, batches: AsyncIterable<T[]>, present: (item: T) => unknown): Promise<void> {
  // The first batch is read before anything is sent: storage that is away then gets the usual
  // error answer, not a download cut short.
  const iterator = batches[Symbol.asyncIterator]();
  const first = await iterator.next();
  const line = (batch: T[]) => batch.map((item) => `${JSON.stringify(present(item))}\n`).join('');
  async function* lines(): AsyncGenerator<string> {
    if (first.done) return;
    yield line(first.value);
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) yield line(next.value);
  }
  ctx.status = 200;
  ctx.type = NDJSON;
  ctx.set('Content-Disposition', `attachment; filename="${filename.replace(/[^A-Za-z0-9._-]/g, '-')}"`);
  ctx.set('Cache-Control', 'no-store');
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.body = Readable.from(lines());
}
