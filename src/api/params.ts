import type { Context } from 'koa';
import { ValidationError } from '../errors.js';

/** A positive integer path parameter such as a group id. */
export function idParam(ctx: Context, name: string): number {
  const raw = String(ctx.params[name] ?? '');
  if (!/^[1-9][0-9]{0,9}$/.test(raw) || Number(raw) > 2_147_483_647) {
    throw new ValidationError(name, `${name} must be a positive integer`);
  }
  return Number(raw);
}

/** An optional query string given at most once, of bounded length. */
export function optionalQuery(ctx: Context, name: string, maxLength: number): string | undefined {
  const raw = ctx.query[name];
  if (Array.isArray(raw)) throw new ValidationError(name, `${name} must be given at most once`);
  if (raw === undefined || raw === '') return undefined;
  if (raw.length > maxLength) throw new ValidationError(name, `${name} must be at most ${maxLength} characters`);
  return raw;
}
