import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { bodyParser } from '@koa/bodyparser';
import Router from '@koa/router';
import Koa, { type Context, type Next } from 'koa';
import mount from 'koa-mount';
import type { Knex } from 'knex';
import type Provider from 'oidc-provider';
import { createRedisAdapter } from '../adapters/redis.js';
import { createSqlAdapter, pruneExpired } from '../adapters/sql.js';
import { apiMiddleware } from './api/router.js';
import type { Config } from './config.js';
import { openDatabase, ping } from './db/knex.js';
import { connectRedis, type RedisClient } from './storage.js';
import { pruneRateLimits } from './db/rate-limits.js';
import { pruneDpopProofs } from './db/dpop-proofs.js';
import type { Logger } from './log.js';
import { countProviderTokens, noMetrics, PrometheusMetrics, serveMetrics, type MetricsListener } from './metrics.js';
import { isStorageOutage, outageStore } from './storage.js';
import { requestMetrics } from './edge/request-metrics.js';
import { VIEWS } from './paths.js';
import { createProvider } from './provider/index.js';
import { watchBackchannelLogout } from './provider/backchannel-logout.js';
import { loadOrCreateKeys } from './provider/keys.js';
import { watchSigningKeys } from './provider/signing-key-watch.js';
import { keyCipher } from './key-encryption.js';
import { clientAddress, trustProxyHops } from './edge/client-address.js';
import { keepConnectionUsable } from './edge/connection.js';
import { CookieSigner } from './cookie-signing.js';
import { issuerHostOnly } from './edge/host.js';
import { securityHeaders } from './edge/security-headers.js';
import { protocolOfIssuer, providerUrlsFromIssuer } from './edge/issuer-urls.js';
import { refuseControlCharacters, refuseControlCharactersInBody } from './edge/refuse-control-characters.js';
import { interactionRoutes } from './interactions/routes.js';
import { restartRoutes } from './interactions/restart.js';
import { accountLinkRoutes } from './web/account-link-routes.js';
import { accountRoutes } from './web/account-routes.js';
import { federationRoutes, upstreamButtons } from './web/federation-routes.js';
import { accountSettingsRoutes } from './web/account-settings-routes.js';
import { twoFactorRoutes } from './web/two-factor-routes.js';
import { PasskeyChallenges, passkeyRoutes } from './web/passkey-routes.js';
import { AccessConfirmation, confirmAccessRoutes } from './web/confirm-access.js';
import { recoveryRoutes } from './web/recovery-routes.js';
import { pruneAnsweredChallenges } from './services/passkeys.js';
import { adminAreaHidden, adminRoutes } from './web/admin-routes.js';
import { apiDocsAssets } from './api/docs.js';
import { appRoutes } from './web/app-routes.js';
import { loadCurrentUser, type WebDeps } from './web/context.js';
import { cookieNames } from './cookie-names.js';
import { refuseHashingWhenBusy } from './web/busy.js';
import { csrfProtection } from './web/csrf.js';
import { unanswered, webErrors } from './web/errors.js';
import { oneTimeFlash } from './web/flash.js';
import { inPageLanguage, renderPage } from './web/render.js';
import { SiteSessions } from './web/session.js';
import { ChangeVersions, registerChangeVersions } from './services/change-versions.js';
import { Limits } from './services/limits.js';
import { dpopReplay } from './services/dpop-replay.js';
import { pendingSignIns } from './services/pending-sign-ins.js';
import { prunePendingSignIns } from './db/pending-sign-ins.js';
import { createMailer } from './services/mail.js';
import { kdfQueue } from './services/passwords.js';
import { pruneExpiredSessions, sessionIndex } from './services/sessions.js';
import { pruneOldSubmissions } from './services/submissions.js';
import { pruneExpiredSignUps } from './services/sign-up.js';
import { pruneExpiredEmailChanges } from './services/email-change.js';
import { groupRoutes } from './web/group-routes.js';
import { webhookRoutes } from './web/webhook-routes.js';
import { resourceRoutes } from './web/resource-routes.js';
import { settingsRoutes } from './web/settings-routes.js';
import { signInMethodsRoutes } from './web/sign-in-methods-routes.js';
import { startWebhookSender, type WebhookSender } from './services/webhooks/sender.js';
import { DirectorySignIn } from './services/directory/sign-in.js';

export interface Idp {
  app: Koa;
  db: Knex;
  redis: RedisClient | undefined;
  provider: Provider;
  /** Where GET /metrics answers, when METRICS_PORT is set. */
  metricsUrl: string | undefined;
  /** Sends the webhook deliveries in the outbox (every instance runs one; none sends a delivery another holds). */
  webhooks: WebhookSender;
  /** From now on /readyz answers 503 `draining`, so a load balancer sends nothing new; everything else still answers. */
  startDraining(): void;
  /** Stops the background jobs and closes the password-hashing workers, the mailer, Redis and the database pool. */
  close(): Promise<void>;
}

export interface IdpOptions {
  logger: Logger;
  /** Redis key prefix (`idp:`; the adapter's keys carry it as a hash tag on a Cluster); tests give each run its own. */
  redisKeyPrefix?: string;
}

const STATIC = join(VIEWS, 'static');
const STATIC_FILES: Record<string, { type: string; body: Buffer }> = {
  '/static/site.css': { type: 'text/css', body: readFileSync(join(STATIC, 'site.css')) },
  '/static/site.js': { type: 'application/javascript', body: readFileSync(join(STATIC, 'site.js')) },
  '/static/passkeys.js': { type: 'application/javascript', body: readFileSync(join(STATIC, 'passkeys.js')) },
  '/static/favicon.svg': { type: 'image/svg+xml', body: readFileSync(join(STATIC, 'favicon.svg')) },
  // @simplewebauthn/browser's own bundle, served from here (no CDN): it defines SimpleWebAuthnBrowser.
  '/static/webauthn.js': { type: 'application/javascript', body: readFileSync(join(dirname(createRequire(import.meta.url).resolve('@simplewebauthn/browser')), '../dist/bundle/index.umd.min.js')) },
  ...apiDocsAssets(),
};

const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;

/** Every response carries an X-Request-Id (the caller's, if sane), and every log line of the request names it. */
function requestLog(logger: Logger) {
  // The request line's fields are these five, none of them a secret: its logger skips the
  // redaction list, which costs more than the rest of the line.
  const lines = logger.child({}, { redact: [] });
  return async function logRequest(ctx: Context, next: Next): Promise<void> {
    const incoming = ctx.get('x-request-id');
    const id = REQUEST_ID.test(incoming) ? incoming : randomUUID();
    ctx.state.requestId = id;
    // The request's own logger (its lines carry reqId) is made only for a request that logs more
    // than its one line below, which is written with the same field.
    let log: Logger | undefined;
    Object.defineProperty(ctx.state, 'log', { get: () => (log ??= logger.child({ reqId: id })), enumerable: true });
    ctx.res.setHeader('X-Request-Id', id);
    const started = performance.now();
    try {
      await next();
    } finally {
      // The path only: query strings may carry codes and secrets (the query-string token request does).
      lines.info({ reqId: id, method: ctx.method, path: ctx.path, status: ctx.status, ms: Math.round(performance.now() - started) }, 'request');
    }
  };
}

/** Starts everything that needs storage: migrations, keys, the provider, and the Koa app around it. */
export async function createIdp(config: Config, options: IdpOptions): Promise<Idp> {
  const { logger } = options;
  const db = await openDatabase(config.databaseUrl, { warn: (message) => logger.warn({ knex: String(message) }, 'database warning') }, { timeoutMs: config.databaseTimeoutMs, pooling: config.databasePooling });
  const redis = config.redis ? connectRedis(config.redis, config.redisTimeoutMs) : undefined;
  redis?.on('error', (err) => logger.warn({ err: err.message }, 'redis connection error'));
  // Before anything that caches what they guard (the provider's client lookups, the API's checks).
  if (redis) registerChangeVersions(db, new ChangeVersions(redis, options.redisKeyPrefix));
  const cipher = config.keysSecret ? keyCipher(config.keysSecret) : undefined;
  const keys = await loadOrCreateKeys(db, config.keysSecret, cipher);
  const secure = config.issuer.startsWith('https://');

  // Counted only when something can read them: without METRICS_PORT, counting costs nothing.
  const prometheus = config.metrics ? new PrometheusMetrics() : undefined;
  const metrics = prometheus ?? noMetrics;
  const onFault = (err: unknown, ctx?: Context) => {
    if (isStorageOutage(err)) metrics.storageError(outageStore(err));
    (ctx?.state.log ?? logger).error({ err }, 'unexpected error');
  };

  const limits = new Limits(config, db, redis, options.redisKeyPrefix, metrics);
  const sessionsSeen = sessionIndex(db, (err) => logger.warn({ err }, 'recording a session failed'));
  const provider = createProvider({
    config,
    db,
    keys,
    limits,
    sessionIndex: sessionsSeen,
    modelAdapter: redis ? createRedisAdapter(redis, { keyPrefix: options.redisKeyPrefix }) : createSqlAdapter(db),
    renderPage: (ctx, view, locals, status) => {
      ctx.type = 'html';
      ctx.status = status;
      ctx.set('Cache-Control', 'no-store');
      const page = inPageLanguage(ctx, view, locals);
      ctx.body = renderPage(view, { ...page.locals, lang: page.lang });
    },
    onError: (err) => onFault(err),
  });
  if (prometheus) countProviderTokens(provider, metrics);
  // Every back-channel logout delivery, the provider's and the service's, logged when it fails and counted.
  watchBackchannelLogout(provider, metrics, logger);
  // Rotated and retired signing keys reach this instance without a restart.
  const signingKeys = watchSigningKeys({ provider, db, cipher, keys: keys.signing, log: logger });

  const sessions = new SiteSessions(provider, secure, sessionsSeen);
  const kdf = kdfQueue(config.kdf, { lowPriority: true });
  prometheus?.watchKdf(() => kdf.load());
  const mailer = createMailer({ ...config.mail, logLinks: config.env !== 'production', logger });
  // Directories (LDAP) check the sign-in form's usernames and passwords too, with connections of their own.
  const directories = new DirectorySignIn({ db, cipher, provider, metrics, log: logger });
  const deps: WebDeps = { config, db, sessions, limits, kdf, mailer, cipher, log: logger, metrics, pendingSignIns: pendingSignIns(db, redis, options.redisKeyPrefix), directories };

  const app = new Koa();
  trustProxyHops(app, config.trustProxy);
  trustProxyHops(provider, config.trustProxy);
  protocolOfIssuer(app, config.issuer);
  protocolOfIssuer(provider, config.issuer);
  providerUrlsFromIssuer(provider);
  // The provider is mounted into this app, so cookies it sets are signed with this app's keys.
  app.keys = new CookieSigner(keys.cookieKeys);
  if (prometheus) app.use(requestMetrics(metrics));
  app.use(keepConnectionUsable);
  app.use(requestLog(logger));
  app.use(issuerHostOnly(config.issuer));
  app.use(securityHeaders(config.issuer));
  app.use(clientAddress);
  app.use(refuseControlCharacters);
  // Before every route: under a flood of sign-ins, a refusal costs as little as an answer can.
  app.use(refuseHashingWhenBusy(kdf, metrics));

  let draining = false;
  const system = new Router();
  system.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  system.get('/readyz', async (ctx) => {
    if (draining) {
      ctx.status = 503;
      ctx.body = { status: 'draining' };
      return;
    }
    // Both stores asked at once, each given READY_CHECK_MS: a load balancer's probe gets its answer
    // in about that long even when a store accepts connections and never answers.
    const [database, redisCheck] = await Promise.all([answersWithin(ping(db)), redis ? answersWithin(redis.ping()) : undefined]);
    const checks: Record<string, string> = { database, ...(redisCheck ? { redis: redisCheck } : {}) };
    const ready = Object.values(checks).every((v) => v === 'ok');
    ctx.status = ready ? 200 : 503;
    ctx.body = { status: ready ? 'ok' : 'unavailable', checks };
  });
  // The pages name /static/favicon.svg; browsers, bookmarks and feed readers still ask for /favicon.ico on their own.
  system.get('/favicon.ico', (ctx) => {
    ctx.status = 301;
    ctx.redirect('/static/favicon.svg');
  });
  system.get('/static/:file', (ctx) => {
    const file = STATIC_FILES[ctx.path];
    if (!file) return;
    ctx.type = file.type;
    ctx.set('Cache-Control', 'public, max-age=3600');
    ctx.body = file.body;
  });
  app.use(system.routes());
  app.use(apiMiddleware({ db, provider, limits, issuer: config.issuer, dpopReplay: dpopReplay(db, redis, options.redisKeyPrefix), cipher, allowPrivateWebhooks: config.webhooks.allowPrivate, onFault }));
  // Below the API (which answers JSON for every path of its own): what nothing answers is a page.
  app.use(unansweredAsPage(deps));

  // Pages: forms parsed here only, never on the provider's routes (it reads its own bodies).
  const web = new Router();
  web.use(webErrors(onFault, deps));
  web.use(bodyParser({ enableTypes: ['form'], formLimit: '64kb', encoding: 'utf-8' }));
  web.use(refuseControlCharactersInBody);
  const names = cookieNames(secure);
  web.use(csrfProtection({ secure, keys: keys.cookieKeys, sessionCookie: names.session, csrfCookie: names.csrf }));
  web.use(oneTimeFlash({ keys: keys.cookieKeys, secure, cookie: names.flash }));
  web.use(loadCurrentUser(deps));
  web.use(upstreamButtons(deps));
  // Re-authentication for the changes a stolen session must not make on its own.
  const access = new AccessConfirmation(deps, new PasskeyChallenges(deps));
  for (const routes of [accountRoutes(deps), federationRoutes(deps), accountLinkRoutes({ ...deps, provider }), groupRoutes({ ...deps, provider }), appRoutes({ ...deps, provider }), webhookRoutes(deps), resourceRoutes(deps), interactionRoutes({ ...deps, provider, cookieKeys: keys.cookieKeys }), restartRoutes({ provider, cookieKeys: keys.cookieKeys }), settingsRoutes({ ...deps, provider }, access), accountSettingsRoutes({ ...deps, provider }, access), twoFactorRoutes(deps, access), passkeyRoutes(deps, access), signInMethodsRoutes(deps, access), confirmAccessRoutes(access), recoveryRoutes({ ...deps, provider })]) {
    web.use(routes.routes(), routes.allowedMethods());
  }
  const admin = adminRoutes({ ...deps, provider });
  web.use(admin.routes(), admin.allowedMethods());
  app.use(mountWhenMatched(web, adminAreaHidden(deps), deps));

  app.use(mount(provider));

  // Expired oidc-provider rows, rate-limit counters, remembered DPoP proofs and sign-ins that
  // waited for a second factor are removed in the background when they live in SQL (Redis
  // expires its own).
  const pruner = redis
    ? undefined
    : setInterval(() => {
        pruneExpired(db).catch((err: unknown) => logger.warn({ err }, 'pruning expired oidc models failed'));
        pruneRateLimits(db).catch((err: unknown) => logger.warn({ err }, 'pruning expired rate-limit counters failed'));
        pruneDpopProofs(db).catch((err: unknown) => logger.warn({ err }, 'pruning expired DPoP proofs failed'));
        prunePendingSignIns(db).catch((err: unknown) => logger.warn({ err }, 'pruning expired second-factor sign-ins failed'));
      }, 10 * 60 * 1000).unref();
  // Rows of Account settings → Sessions outlive their sessions in either store: removed the same way.
  const sessionPruner = setInterval(() => {
    pruneExpiredSessions(db).catch((err: unknown) => logger.warn({ err }, 'pruning expired sessions failed'));
    pruneAnsweredChallenges(db).catch((err: unknown) => logger.warn({ err }, 'pruning answered passkey challenges failed'));
    pruneOldSubmissions(db).catch((err: unknown) => logger.warn({ err }, 'pruning old one-time form keys failed'));
    pruneExpiredSignUps(db).catch((err: unknown) => logger.warn({ err }, 'pruning expired sign-ups failed'));
    pruneExpiredEmailChanges(db).catch((err: unknown) => logger.warn({ err }, 'pruning expired e-mail changes failed'));
  }, 10 * 60 * 1000).unref();

  // The accounts linked to each directory, checked against it every DIRECTORY_CHECK_INTERVAL_S by one instance.
  const directoryChecker = config.directoryCheckIntervalS
    ? setInterval(() => {
        directories.checkDue(config.directoryCheckIntervalS).catch((err: unknown) => logger.warn({ err }, 'checking directory accounts failed'));
      }, Math.min(60, config.directoryCheckIntervalS) * 1000).unref()
    : undefined;

  // Deliveries of group events to webhooks, from the outbox in the database.
  const webhooks = startWebhookSender({ db, cipher, log: logger, metrics, ...config.webhooks });

  let metricsListener: MetricsListener | undefined;
  const close = async () => {
    await metricsListener?.close();
    await webhooks.stop();
    if (directoryChecker) clearInterval(directoryChecker);
    await directories.close();
    signingKeys.stop();
    if (pruner) clearInterval(pruner);
    clearInterval(sessionPruner);
    await kdf.close();
    mailer.close();
    // QUIT lets replies under way arrive; a Redis that is away is just dropped.
    if (redis?.status === 'ready') await redis.quit().catch(() => redis.disconnect());
    else redis?.disconnect();
    await db.destroy();
  };
  // Its own listener, never the public port: GET /metrics on the issuer is a 404 like any unknown path.
  if (prometheus && config.metrics) {
    metricsListener = await serveMetrics(prometheus, config.metrics.host, config.metrics.port).catch(async (err: unknown) => {
      await close();
      throw err;
    });
    logger.info({ url: metricsListener.url }, 'metrics listener started');
  }

  return {
    app,
    db,
    redis,
    provider,
    metricsUrl: metricsListener?.url,
    webhooks,
    startDraining() {
      draining = true;
    },
    close,
  };
}

const READY_CHECK_MS = 1500;

/** 'ok' when `check` succeeds within READY_CHECK_MS, 'unreachable' otherwise. */
async function answersWithin(check: Promise<unknown>): Promise<'ok' | 'unreachable'> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('no answer in time')), READY_CHECK_MS);
  });
  try {
    await Promise.race([check, late]);
    return 'ok';
  } catch {
    return 'unreachable';
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Runs the page router only for paths it knows, so everything else falls through to the provider;
 * so do the paths `hidden` keeps out of sight of this request (the Admin area, to non-administrators).
 * A page's address asked with another method (GET /verify-email/resend) is answered 405 with `Allow`.
 */
function mountWhenMatched(router: Router, hidden: (ctx: Context) => Promise<boolean>, deps: WebDeps) {
  const routes = router.routes();
  // Paths no page has in any method (the provider's, on every token request) are remembered, so
  // the router's patterns are not tried on them again; forgotten all at once past a bound.
  const notPages = new Set<string>();
  return async function pages(ctx: Context, next: Next): Promise<void> {
    if (notPages.has(ctx.path)) return next();
    const match = router.match(ctx.path, ctx.method);
    if (match.route && !(await hidden(ctx))) return routes(ctx as never, next);
    const allowed = [...new Set(match.path.flatMap((layer) => layer.methods))];
    if (!match.route && allowed.length && !(await hidden(ctx))) return unanswered(ctx, deps, allowed);
    // match.path also holds the router's own middleware layers, which match every path and have
    // no methods: a path no route layer matches is not a page.
    if (!match.route && !allowed.length) {
      if (notPages.size >= NOT_PAGES_REMEMBERED) notPages.clear();
      notPages.add(ctx.path);
    }
    return next();
  };
}

const NOT_PAGES_REMEMBERED = 1000;

/** A request no route answered (the provider's included) gets the site's 404 or 405 page, never a bare text. */
function unansweredAsPage(deps: WebDeps) {
  return async function pageForUnanswered(ctx: Context, next: Next): Promise<void> {
    await next();
    if (ctx.body == null && (ctx.status === 404 || ctx.status === 405)) await unanswered(ctx, deps);
  };
}
