import type { Context } from 'koa';
import { DPOP_SIGNING_ALGS } from '../provider/configuration.js';
import { API_SCOPES } from '../vocabulary.js';
import { API_PREFIX } from '../edge/surface.js';

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

/** Answers the document (GET or HEAD, from any origin, as the authorization server's metadata is). */
export function serveApiResourceMetadata(issuer: string) {
  const body = JSON.stringify(apiResourceMetadata(issuer));
  return function resourceMetadata(ctx: Context): boolean {
    if (ctx.path !== API_RESOURCE_METADATA_PATH) return false;
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      ctx.status = 405;
      ctx.set('Allow', 'GET, HEAD');
      ctx.body = { error: 'method_not_allowed', error_description: 'the resource metadata is read with GET' };
      return true;
    }
    ctx.set('Access-Control-Allow-Origin', '*');
    ctx.set('Cache-Control', 'public, max-age=3600');
    ctx.type = 'application/json';
    ctx.body = body;
    return true;
  };
}
