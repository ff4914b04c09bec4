import type { Context } from 'koa';
import { z } from 'zod';
import * as rules from '../services/rules.js';
import { parseQuery } from './params.js';

export interface Page {
  pageNumber: number;
  pageSize: number;
  limit: number;
  offset: number;
}

/** The one pagination of every list: `pageNumber` and `pageSize`, by the rules' `pageQuery`. */
export function parsePage(ctx: Context): Page {
  const { pageNumber, pageSize } = parseQuery(ctx, rules.pageQuery);
  return { pageNumber, pageSize, limit: pageSize, offset: (pageNumber - 1) * pageSize };
}

/** The envelope of a page of `item`s, as sendPage writes it. */
export function pageOf(item: z.ZodType) {
  return z.object({
    data: z.object({ total: z.int().min(0), items: z.array(item) }),
    pageNumber: rules.pageQuery.shape.pageNumber,
    pageSize: rules.pageQuery.shape.pageSize,
  });
}

/**
 * Writes the `{data: {total, items}, pageNumber, pageSize}` envelope and the RFC 8288 Link header.
 * `filters` are the list's own query parameters, as the route read them, kept in every link;
 * nothing else of the query string is: a parameter the list does not read changes nothing, and
 * copied four times into a header it would let a long query string swell the answer's head past
 * what clients and proxies read (16 KiB in Node's client, 4–8 KiB in nginx's default buffers).
 */
export function sendPage<T>(ctx: Context, base: string, page: Page, result: { total: number; items: T[] }, filters: Record<string, string | undefined> = {}): void {
  const last = Math.max(1, Math.ceil(result.total / page.pageSize));
  // One URL and one parameter list for all the links (this runs on every list call).
  const target = new URL(ctx.path, base).href;
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(filters)) {
    if (value !== undefined) params.set(key, value);
  }
  const link = (n: number, rel: string) => {
    params.set('pageNumber', String(n));
    params.set('pageSize', String(page.pageSize));
    return `<${target}?${params}>; rel="${rel}"`;
  };
  const links = [link(1, 'first')];
  if (page.pageNumber > 1) links.push(link(Math.min(page.pageNumber - 1, last), 'prev'));
  if (page.pageNumber < last) links.push(link(page.pageNumber + 1, 'next'));
  links.push(link(last, 'last'));
  ctx.set('Link', links.join(', '));
  ctx.body = { data: { total: result.total, items: result.items }, pageNumber: page.pageNumber, pageSize: page.pageSize };
}
