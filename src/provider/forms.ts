import type { IncomingMessage } from 'node:http';
import * as querystring from 'node:querystring';
import type { Context, Next } from 'koa';
import { controlCharacterMessage, fieldWithControlCharacter } from '../control-characters.js';

/**
 * oidc-provider reads its own form bodies; this pre-step reads them first, on every form POST to
 * the provider, so that each form passes the same edge check as the rest of the service (no
 * control characters, a 413 past 56 KiB that leaves the connection usable), and then gives the
 * library the form's bytes to read as if nobody had read them (replayBody). The library also
 * takes an already-parsed `req.body`, but warns ("already parsed request body detected") that an
 * upstream parser is a misconfiguration; a replayed body is read the library's own way.
 * Other content types are left to the library, which answers them with invalid_request.
 */
const BODY_LIMIT = 56 * 1024;
export const FORM = 'application/x-www-form-urlencoded';

export type FormParams = Record<string, string | string[] | undefined>;

const FORMS = new WeakMap<IncomingMessage, FormParams>();

export function providerFormBodies() {
  return async function readFormBodies(ctx: Context, next: Next): Promise<void> {
    if (ctx.method !== 'POST' || !ctx.is(FORM)) return next();
    const form = await readForm(ctx);
    if (form === 'too-large') return invalidRequest(ctx, 413, 'the request body is too large');
    const field = fieldWithControlCharacter(form);
    if (field !== undefined) return invalidRequest(ctx, 400, controlCharacterMessage(field));
    setParsedForm(ctx, form);
    ctx.req.headers['content-type'] = FORM;
    return next();
  };
}

/** The form readFormBodies read for the library, if the request had one (as the library will read it). */
export function parsedForm(ctx: Context): FormParams | undefined {
  return FORMS.get(ctx.req);
}

/** Replaces the form the library will read. */
export function setParsedForm(ctx: Context, form: FormParams): void {
  FORMS.set(ctx.req, form);
  replayBody(ctx.req, Buffer.from(querystring.stringify(form), 'utf8'));
}

/**
 * Makes the request readable again, yielding `body`: the library checks `req.readable` and then
 * reads with `req.iterator()`, up to the Content-Length, which is set to the replayed length (the
 * token request's form grows by its query). The request's own stream was read to its end already.
 */
function replayBody(req: IncomingMessage, body: Buffer): void {
  let ended = false;
  Object.defineProperty(req, 'readable', { configurable: true, get: () => !ended });
  // One chunk, as a bare async iterator: a Readable made for it costs more than the rest of this step.
  req.iterator = (async function* replay() {
    if (ended) return;
    try {
      yield body;
    } finally {
      ended = true;
    }
  }) as IncomingMessage['iterator'];
  req.headers['content-length'] = String(body.length);
  delete req.headers['transfer-encoding'];
}

/**
 * Reads at most BODY_LIMIT bytes. Past the limit it stops reading without destroying the request:
 * the rest of the body is drained (or the connection closed) once the answer is sent, so a
 * keep-alive client's next request on the same connection still works.
 */
async function readForm(ctx: Context): Promise<FormParams | 'too-large'> {
  const declared = Number(ctx.get('content-length') || 0);
  if (declared > BODY_LIMIT) return 'too-large';
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req.iterator({ destroyOnReturn: false })) {
    size += (chunk as Buffer).length;
    if (size > BODY_LIMIT) return 'too-large';
    chunks.push(chunk as Buffer);
  }
  return querystring.parse(Buffer.concat(chunks).toString('utf8')) as FormParams;
}

function invalidRequest(ctx: Context, status: number, description: string): void {
  ctx.status = status;
  ctx.set('Cache-Control', 'no-store');
  ctx.body = { error: 'invalid_request', error_description: description };
}
