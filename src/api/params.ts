import type { Context } from 'koa';
import { ValidationError } from '../errors.js';
import { MAX_ID, parseId } from '../ids.js';

/** A positive integer path parameter such as a group id. */
export function idParam(ctx: Context, name: string): number {
  const id = parseId(ctx.params[name]);
  if (id === undefined) throw new ValidationError(name, `${name} must be an integer from 1 to ${MAX_ID}`);
  return id;
}

/** An optional query string given at most once, of bounded length. */
export function optionalQuery(ctx: Context, name: string, maxLength: number): string | undefined {
  const raw = ctx.query[name];
  if (Array.isArray(raw)) throw new ValidationError(name, `${name} must be given at most once`);
  if (raw === undefined || raw === '') return undefined;
  if (raw.length > maxLength) throw new ValidationError(name, `${name} must be at most ${maxLength} characters`);
  return raw;
}
