import type { ResourceLinks } from '../../presenters/resource.js';

/**
 * The addresses a resource's server is told of, beside its credentials. Nothing here loads the
 * provider, so the CLI prints them as the API does without loading oidc-provider.
 */

/**
 * Where the metadata of each resource a group registered is published, by its identifier
 * (`?resource=<identifier>`): the resource's server serves the same document at its own
 * `/.well-known/oauth-protected-resource…` (RFC 9728 §3.1), copying it from here or linking to it.
 * Only a resource whose identifier one already knows can be read: nothing here lists them.
 */
export const RESOURCE_METADATA_PATH = '/login/oauth/resource-metadata';

/** The provider's introspection endpoint (its ROUTES.introspection; the tests hold the two equal). */
export const INTROSPECTION_PATH = '/login/oauth/introspect';

export function resourceMetadataUrl(issuer: string, identifier: string): string {
  return `${issuer}${RESOURCE_METADATA_PATH}?${new URLSearchParams({ resource: identifier })}`;
}

/** Its protected resource metadata (RFC 9728) as published here, and the introspection endpoint (RFC 7662) it checks tokens at. */
export function resourceLinks(issuer: string, identifier: string): ResourceLinks {
  return { metadataUrl: resourceMetadataUrl(issuer, identifier), introspectionEndpoint: `${issuer}${INTROSPECTION_PATH}` };
}
