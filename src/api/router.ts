import { bodyParser } from '@koa/bodyparser';
import Router from '@koa/router';
import compose from 'koa-compose';
import type { Knex } from 'knex';
import type { Context, Middleware, Next } from 'koa';
import type Provider from 'oidc-provider';
import { AppError } from '../errors.js';
import type { KeyCipher } from '../key-encryption.js';
import type { DpopReplay } from '../services/dpop-replay.js';
import type { Limits } from '../services/limits.js';
import { adminApi } from './admin/routes.js';
import { appsApi } from './apps/routes.js';
import { credentialsApi } from './credentials/routes.js';
import { refuseControlCharactersInBody } from '../edge/refuse-control-characters.js';
import { API_PREFIX } from '../edge/surface.js';
import { bearerAuth } from './auth.js';
import { apiErrors, MAX_BODY_KIB } from './errors.js';
import { groupsApi } from './groups/routes.js';
import { API_DOCS_PAGE } from './docs.js';
import { openApiDocument } from './openapi.js';
import { isResourceMetadataPath, serveResourceMetadata } from './protected-resource.js';
import { resourcesApi } from './resources/routes.js';
import { userApi } from './user/routes.js';
import { webhooksApi } from './webhooks/routes.js';

export { API_PREFIX };

interface ApiDeps {
  db: Knex;
  provider: Provider;
  limits: Limits;
  issuer: string;
  /** The accepted DPoP proofs, shared by every instance. */
  dpopReplay: DpopReplay;
  /** KEYS_SECRET's cipher, which seals webhook secrets. */
  cipher: KeyCipher | undefined;
  /** Webhooks may target private and loopback addresses (WEBHOOKS_ALLOW_PRIVATE). */
  allowPrivateWebhooks: boolean;
}

/** Request bodies are JSON of at most MAX_BODY_KIB; anything else with a body is a 415. */
function jsonBodiesOnly(ctx: Context, next: Next): Promise<void> {
  const hasBody = Number(ctx.get('content-length') || 0) > 0 || ctx.get('transfer-encoding') !== '';
  if (hasBody && !ctx.is('application/json')) {
    throw new AppError(415, 'unsupported_media_type', 'the request body must be application/json');
  }
  return next();
}

/**
 * Everything under /apis/v2, answered here and never passed on: an unknown path is a JSON 404
 * from the API's own error handler, not a page. The API's protected resource metadata (RFC 9728)
 * and each registered resource's are answered here too.
 */
export function apiMiddleware(deps: ApiDeps & { onFault: (err: unknown, ctx: Context) => void }): Middleware {
  const router = apiRouter(deps);
  const handle = compose([apiErrors(deps.onFault), router.routes() as Middleware, router.allowedMethods() as Middleware]);
  const resourceMetadata = serveResourceMetadata(deps.issuer, deps.db);
  return function api(ctx, next) {
    if (ctx.path !== API_PREFIX && !ctx.path.startsWith(`${API_PREFIX}/`)) {
      return isResourceMetadataPath(ctx.path) ? resourceMetadata(ctx).then(() => undefined) : next();
    }
    return handle(ctx, async () => {});
  };
}

function apiRouter(deps: ApiDeps): Router {
  const realm = deps.issuer;
  const router = new Router({ prefix: API_PREFIX });
  const document = openApiDocument(deps.issuer);

  router.get('/openapi.json', (ctx) => {
    ctx.body = document;
  });
  // The same document, readable: no token needed, as for the document itself.
  router.get('/docs', (ctx) => {
    ctx.type = 'html';
    ctx.body = API_DOCS_PAGE;
  });
  const readJson: Middleware[] = [jsonBodiesOnly, bodyParser({ enableTypes: ['json'], jsonLimit: `${MAX_BODY_KIB}kb`, encoding: 'utf-8' }) as Middleware];
  const readBody: Middleware[] = [...readJson, refuseControlCharactersInBody as Middleware];
  // Reports of leaked credentials come from anyone, with no token: before the bearer check. A
  // reported value with a control character (a token pasted with its line ending) is one the
  // report ignores, never a reason to refuse the others: no control-character check there.
  router.use(credentialsApi({ db: deps.db, provider: deps.provider, limits: deps.limits, readBody: readJson }).routes());
  router.use(bearerAuth({ db: deps.db, provider: deps.provider, limits: deps.limits, realm, issuer: deps.issuer, replay: deps.dpopReplay }));
  for (const step of readBody) router.use(step);

  for (const routes of [
    groupsApi({ db: deps.db, provider: deps.provider, issuer: deps.issuer, realm }),
    userApi({ db: deps.db, realm }),
    appsApi({ db: deps.db, provider: deps.provider, issuer: deps.issuer, realm }),
    adminApi({ db: deps.db, provider: deps.provider, issuer: deps.issuer, realm }),
    webhooksApi({ db: deps.db, cipher: deps.cipher, allowPrivate: deps.allowPrivateWebhooks, issuer: deps.issuer, realm }),
    resourcesApi({ db: deps.db, issuer: deps.issuer, realm }),
  ]) {
    router.use(routes.routes());
  }
  return router;
}
