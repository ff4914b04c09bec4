import type { ResourceLinks } from '../../presenters/resource.js';
import { ROUTES } from '../../provider/configuration.js';
import { resourceMetadataUrl } from '../protected-resource.js';

/**
 * What a resource's server is told of, beside its credentials: its protected resource metadata
 * (RFC 9728) as published here, and the introspection endpoint (RFC 7662) it checks tokens at.
 */
export function resourceLinks(issuer: string, identifier: string): ResourceLinks {
  return { metadataUrl: resourceMetadataUrl(issuer, identifier), introspectionEndpoint: `${issuer}${ROUTES.introspection}` };
}
