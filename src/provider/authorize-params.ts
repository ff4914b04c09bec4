import { DEFAULT_SCOPE, splitScopes } from '../vocabulary.js';

type Query = Record<string, string | string[] | undefined>;

/**
 * The authorize request's query as the library should read it (it serves authorize over GET
 * only). The README's curl request carries neither `scope` nor `response_type`: no scope means
 * groups:read-only, and response_type defaults to `code`, the only one there is. Scopes may be
 * separated by commas, as clients written for GitHub send them (`scope=groups:read-only,openid`):
 * here they become the spaces RFC 6749 specifies. A repeated parameter is left for the library
 * to refuse. Returns undefined when the query needs no change.
 */
export function authorizeQuery(query: Query): Query | undefined {
  const { scope, response_type } = query;
  const normalScope = typeof scope === 'string' ? splitScopes(scope).join(' ') : scope;
  const changes: Query = {};
  if (!normalScope) changes.scope = DEFAULT_SCOPE;
  else if (normalScope !== scope) changes.scope = normalScope;
  if (!response_type) changes.response_type = 'code';
  return Object.keys(changes).length ? { ...query, ...changes } : undefined;
}
