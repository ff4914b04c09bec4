import Router from '@koa/router';
import type { Knex } from 'knex';
import type { Middleware } from 'koa';
import type Provider from 'oidc-provider';
import { revokeReportedCredentials } from '../../services/leaked-credentials.js';
import type { Limits } from '../../services/limits.js';
import { jsonObject } from '../params.js';

/** The one answer to every report that parses, whatever it named. */
export const REPORT_ACCEPTED = {
  message: 'Thank you. Every live credential among those sent is revoked, and its owner is told.',
} as const;

/**
 * `POST /credentials/revoke`: reports of credentials found in public, from anyone, without a
 * token (a secret scanner has none). Counted per client address before anything is read; the
 * answer is 202 with the same body for live, revoked, malformed and unknown values alike.
 */
export function credentialsApi(deps: { db: Knex; provider: Provider; limits: Limits; readBody: Middleware[] }): Router {
  const router = new Router();
  router.post(
    '/credentials/revoke',
    async (ctx, next) => {
      await deps.limits.takeCredentialReport(ctx.ip);
      await next();
    },
    ...deps.readBody,
    async (ctx) => {
      await revokeReportedCredentials(deps, jsonObject(ctx), ctx.ip || null);
      ctx.status = 202;
      ctx.set('Cache-Control', 'no-store');
      ctx.body = REPORT_ACCEPTED;
    },
  );
  return router;
}
