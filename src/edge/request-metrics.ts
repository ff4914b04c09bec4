import type { Context, Next } from 'koa';
import type { Metrics } from '../metrics.js';
import { ROUTES } from '../provider/configuration.js';
import { surfaceOf } from './surface.js';

/** What the routers leave on the context: @koa/router's matched layers, and the route both routers set. */
type Layer = { path: unknown; methods: string[] };
type Routed = Context & { matched?: Layer[]; _matchedRoute?: unknown; _matchedRouteName?: unknown };

/** The provider's fixed addresses, for a request refused before its router took it (a store away, a client's limit). */
const OAUTH_ROUTES = new Map<string, string>(Object.entries(ROUTES).map(([name, path]) => [path, `oauth_${name}`]));

/**
 * The route label of a request, from a short fixed list whatever was asked: an OAuth endpoint by
 * oidc-provider's name for it (`oauth_token`, `oauth_authorization`, `oauth_userinfo`, …), a page
 * or API route by its pattern (`/groups/:group`, `/apis/v2/groups/:group/apps`), also when a step
 * before the route refused the request (a 401, a 405), and a request no route took by its surface
 * (`api`, `oauth`, `page`). Never the path itself, which carries ids.
 */
export function routeOf(ctx: Context): string {
  const routed = ctx as Routed;
  // oidc-provider defines `ctx.oidc` on the requests its own router takes.
  if (Object.hasOwn(ctx, 'oidc') && typeof routed._matchedRouteName === 'string') return `oauth_${routed._matchedRouteName}`;
  const endpoints = (routed.matched ?? []).filter((layer): layer is Layer & { path: string } => layer.methods.length > 0 && typeof layer.path === 'string');
  if (endpoints.some((layer) => layer.path === routed._matchedRoute)) return routed._matchedRoute as string;
  const endpoint = endpoints.findLast((layer) => layer.methods.includes(ctx.method)) ?? endpoints.at(-1);
  return endpoint?.path ?? OAUTH_ROUTES.get(ctx.path) ?? surfaceOf(ctx.path);
}

/** The status the client gets: oidc-provider answers some requests on `res` itself (`ctx.respond = false`). */
function answeredStatus(ctx: Context): number {
  return ctx.respond === false ? ctx.res.statusCode : ctx.status;
}

/** What Koa answers for an error that escaped every handler. */
function statusOfThrown(err: unknown): number {
  const status = (err as { status?: unknown; statusCode?: unknown } | undefined)?.status ?? (err as { statusCode?: unknown } | undefined)?.statusCode;
  return typeof status === 'number' && status >= 400 && status < 600 ? status : 500;
}

/** Counts and times every request (outermost, so edge refusals count too): one increment and one observation. */
export function requestMetrics(metrics: Metrics) {
  return async function measure(ctx: Context, next: Next): Promise<void> {
    const started = performance.now();
    let thrown: number | undefined;
    try {
      await next();
    } catch (err) {
      thrown = statusOfThrown(err);
      throw err;
    } finally {
      metrics.httpRequest(routeOf(ctx), ctx.method, thrown ?? answeredStatus(ctx), (performance.now() - started) / 1000);
    }
  };
}
