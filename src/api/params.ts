import type { Context } from 'koa';
import { z } from 'zod';
import { ValidationError } from '../errors.js';
import { bigRecordIdText, MAX_BIG_ID, MAX_ID, parseId } from '../ids.js';
import * as rules from '../services/rules.js';

/** A positive integer path parameter such as a group id; `bigint` for the id of a row of a `bigint` column (a webhook delivery). */
export function idParam(ctx: Context, name: string, column: 'integer' | 'bigint' = 'integer'): number {
  const id = column === 'integer' ? parseId(ctx.params[name]) : bigRecordIdText.safeParse(ctx.params[name]).data;
  if (id === undefined) throw new ValidationError(name, `${name} must be an integer from 1 to ${column === 'integer' ? MAX_ID : MAX_BIG_ID}`);
  return id;
}

/** The query string parsed with `schema`; the error names the first bad parameter in the schema's own words. */
export function parseQuery<T extends z.ZodType>(ctx: Context, schema: T): z.output<T> {
  const result = schema.safeParse(ctx.query);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  throw new ValidationError(String(issue.path[0]), issue.message);
}

/** The schema of each optional query parameter, built once: zod compiles a schema on its first parse. */
const optionalQuerySchemas = new Map<string, z.ZodType<Record<string, string | undefined>>>();

/** An optional query string given at most once, of bounded length. */
export function optionalQuery(ctx: Context, name: string, maxLength: number): string | undefined {
  const key = `${name}\u0000${maxLength}`;
  let schema = optionalQuerySchemas.get(key);
  if (!schema) {
    schema = z.object({ [name]: rules.queryText(name, maxLength) }) as unknown as z.ZodType<Record<string, string | undefined>>;
    optionalQuerySchemas.set(key, schema);
  }
  return parseQuery(ctx, schema)[name];
}

/** The parsed JSON body as an object (no body at all is `{}`); an array or a scalar is a 400. */
export function jsonObject(ctx: Context): Record<string, unknown> {
  const body = (ctx.request as { body?: unknown }).body;
  if (body === undefined) return {};
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new ValidationError('body', 'the request body must be a JSON object');
  }
  return body as Record<string, unknown>;
}
