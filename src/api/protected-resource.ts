import type { Context } from 'koa';
import type { Knex } from 'knex';
import { registeredResource } from '../services/resources/lookup.js';
import { DPOP_SIGNING_ALGS } from '../provider/configuration.js';
import { API_SCOPES } from '../vocabulary.js';
import { API_PREFIX } from '../edge/surface.js';
import { RESOURCE_METADATA_PATH, resourceMetadata } from '../presenters/resource.js';

/**
 * OAuth 2.0 Protected Resource Metadata (RFC 9728) of the API: how a client that meets
 * `/apis/v2` without a token (an MCP client, say) learns which authorization server issues its
 * tokens and what it may ask for. It is at the path RFC 9728 §3.1 makes from the resource's
 * identifier, and every 401 and 403 of the API names it (`resource_metadata` in
 * WWW-Authenticate, §5.1).
 */
export const API_RESOURCE_METADATA_PATH = `/.well-known/oauth-protected-resource${API_PREFIX}`;

export function apiResourceMetadataUrl(issuer: string): string {
  return `${issuer}${API_RESOURCE_METADATA_PATH}`;
}

export function apiResourceMetadata(issuer: string) {
  return {
    resource: `${issuer}${API_PREFIX}`,
    authorization_servers: [issuer],
    scopes_supported: [...API_SCOPES],
    bearer_methods_supported: ['header'],
    resource_name: 'Horizon ID API',
    resource_documentation: `${issuer}${API_PREFIX}/docs`,
    dpop_signing_alg_values_supported: [...DPOP_SIGNING_ALGS],
    dpop_bound_access_tokens_required: false,
  };
}

export function isResourceMetadataPath(path: string): boolean {
  return path === API_RESOURCE_METADATA_PATH || path === RESOURCE_METADATA_PATH;
}

/**
 * Answers the API's document, and each registered resource's (GET or HEAD, from any origin, as
 * the authorization server's metadata is). Returns false for every other path.
 */
export function serveResourceMetadata(issuer: string, db: Knex) {
  const apiBody = JSON.stringify(apiResourceMetadata(issuer));
  return async function resourceMetadataDocument(ctx: Context): Promise<boolean> {
    if (!isResourceMetadataPath(ctx.path)) return false;
    ctx.set('Cache-Control', 'no-store');
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      ctx.status = 405;
      ctx.set('Allow', 'GET, HEAD');
      ctx.body = { error: 'method_not_allowed', error_description: 'the resource metadata is read with GET' };
      return true;
    }
    ctx.set('Access-Control-Allow-Origin', '*');
    if (ctx.path === API_RESOURCE_METADATA_PATH) {
      ctx.set('Cache-Control', 'public, max-age=3600');
      ctx.type = 'application/json';
      ctx.body = apiBody;
      return true;
    }
    const identifier = ctx.query.resource;
    const resource = typeof identifier === 'string' ? await registeredResource(db, identifier) : undefined;
    if (!resource) {
      ctx.status = typeof identifier === 'string' ? 404 : 400;
      ctx.body = typeof identifier === 'string'
        ? { error: 'not_found', error_description: 'no resource is registered with this identifier' }
        : { error: 'invalid_request', error_description: 'resource is required, once: the identifier of a registered resource' };
      return true;
    }
    // A resource's scopes and name can change: its server re-reads them within five minutes.
    ctx.set('Cache-Control', 'public, max-age=300');
    ctx.body = resourceMetadata(issuer, resource);
    return true;
  };
}
