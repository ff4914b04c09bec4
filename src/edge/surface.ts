import type { Context } from 'koa';
import { renderError } from '../web/render.js';

/**
 * Which of the three surfaces a request belongs to, so that an answer given at the edge (before
 * any router) speaks that surface's language: `{error, error_description}` JSON on the API and
 * on the OAuth endpoints, a page everywhere else.
 */
export type Surface = 'api' | 'oauth' | 'page';

export const API_PREFIX = '/apis/v2';
const OAUTH_PREFIXES = ['/login/oauth/', '/.well-known/'];

export function surfaceOf(path: string): Surface {
  if (path === API_PREFIX || path.startsWith(`${API_PREFIX}/`)) return 'api';
  if (OAUTH_PREFIXES.some((prefix) => path.startsWith(prefix))) return 'oauth';
  return 'page';
}

const PAGE_TITLES: Record<number, string> = { 400: 'Bad request', 413: 'Too large', 415: 'Unsupported content type' };

/** A 4xx answered at the edge: `invalid_request`-style JSON on the API and OAuth endpoints, the error page on pages. */
export function refuseAtEdge(ctx: Context, status: number, error: string, description: string): void {
  if (surfaceOf(ctx.path) === 'page') {
    renderError(ctx, status, PAGE_TITLES[status] ?? 'Error', description);
    return;
  }
  ctx.status = status;
  ctx.set('Cache-Control', 'no-store');
  ctx.body = { error, error_description: description };
}
