import type { Context, Next } from 'koa';
import { ValidationError } from '../errors.js';
import {
  controlCharacterMessage,
  cookieWithControlCharacter,
  fieldWithControlCharacter,
  pathHasControlCharacter,
} from '../control-characters.js';
import { refuseAtEdge } from './surface.js';

/**
 * The edge check of every request, before any router: the path (each segment decoded), every
 * query parameter (name and value) and every cookie. A hit is a 400 naming the field.
 */
export async function refuseControlCharacters(ctx: Context, next: Next): Promise<void> {
  const field = pathHasControlCharacter(ctx.path)
    ? 'path'
    : (queryFieldWithControlCharacter(ctx) ?? cookieWithControlCharacter(ctx.get('cookie') || undefined));
  if (field !== undefined) {
    refuseAtEdge(ctx, 400, 'invalid_request', controlCharacterMessage(field));
    return;
  }
  await next();
}

function queryFieldWithControlCharacter(ctx: Context): string | undefined {
  if (!ctx.querystring) return undefined;
  return fieldWithControlCharacter(ctx.query);
}

/**
 * The same check on a parsed body (a page's form, the API's JSON), run right after the body
 * parser: a ValidationError naming the field, answered by that surface's error handler.
 */
export function refuseControlCharactersInBody(ctx: Context, next: Next): Promise<void> {
  const body = (ctx.request as { body?: unknown }).body;
  const field = body === undefined ? undefined : fieldWithControlCharacter(body);
  if (field !== undefined) throw new ValidationError(field, controlCharacterMessage(field));
  return next();
}
