import type { Context } from 'koa';
import { ValidationError } from '../errors.js';

export interface Page {
  pageNumber: number;
  pageSize: number;
  limit: number;
  offset: number;
}

const MAX_PAGE_NUMBER = 1_000_000_000;

function integerParam(ctx: Context, name: string, fallback: number, max: number): number {
  const raw = ctx.query[name];
  if (Array.isArray(raw)) throw new ValidationError(name, `${name} must be given at most once`);
  if (raw === undefined || raw === '') return fallback;
  if (!/^[0-9]+$/.test(raw) || Number(raw) < 1 || Number(raw) > max) {
    throw new ValidationError(name, `${name} must be an integer from 1 to ${max}`);
  }
  return Number(raw);
}

/** The one pagination of every list: `pageNumber` ≥ 1 (default 1), `pageSize` 1–50 (default 20). */
export function parsePage(ctx: Context): Page {
  const pageNumber = integerParam(ctx, 'pageNumber', 1, MAX_PAGE_NUMBER);
  const pageSize = integerParam(ctx, 'pageSize', 20, 50);
  return { pageNumber, pageSize, limit: pageSize, offset: (pageNumber - 1) * pageSize };
}

/** Writes the `{data: {total, items}, pageNumber, pageSize}` envelope and the RFC 8288 Link header. */
export function sendPage<T>(ctx: Context, base: string, page: Page, result: { total: number; items: T[] }): void {
  const last = Math.max(1, Math.ceil(result.total / page.pageSize));
  // One URL and one parameter list for all the links (this runs on every list call).
  const target = new URL(ctx.path, base).href;
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(ctx.query)) {
    if (typeof value === 'string' && key !== 'pageNumber' && key !== 'pageSize') params.set(key, value);
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
