import { z } from 'zod';
import type { Resource } from '../db/resources.js';
import { recordId } from '../ids.js';
import { toIso } from '../time.js';
import { tokenPattern } from '../tokens.js';
import { TOKEN_FORMATS } from '../vocabulary.js';
import { timestamp } from './json.js';

/** A resource as the services hand it over (its shape beside its row, db/resources.ts). */
export type PresentableResource = Omit<Resource, 'groupId'>;

/** The addresses a resource's server is told of: its metadata document and where it introspects. */
export interface ResourceLinks {
  metadataUrl: string;
  introspectionEndpoint: string;
}

/**
 * Where the metadata of each resource a group registered is published, by its identifier
 * (`?resource=<identifier>`): the resource's server serves the same document at its own
 * `/.well-known/oauth-protected-resource…` (RFC 9728 §3.1), copying it from here or linking to it.
 * Only a resource whose identifier one already knows can be read: nothing here lists them.
 * Nothing here loads the provider, so the CLI prints these as the API does.
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

/** The RFC 9728 document of a registered resource, whose tokens this service issues. */
export function resourceMetadata(issuer: string, resource: { identifier: string; name: string; scopes: ReadonlyArray<{ name: string }> }) {
  return {
    resource: resource.identifier,
    authorization_servers: [issuer],
    scopes_supported: resource.scopes.map((s) => s.name),
    bearer_methods_supported: ['header'],
    resource_name: resource.name,
  };
}

/** A resource as the API names its fields: never its introspection secret, which is shown once. */
export const resourceJson = z.object({
  id: recordId,
  identifier: z.string().describe('The resource indicator (RFC 8707) clients send as `resource`, in its normal form; the `aud` of its tokens').meta({ format: 'uri' }),
  name: z.string().describe('What the consent page calls the resource'),
  scopes: z
    .array(z.object({ name: z.string().describe('The scope as a client asks for it'), description: z.string().describe('What the consent page says it lets an application do') }))
    .min(1)
    .describe('The scopes the resource defines, in the order given'),
  tokenFormat: z.enum(TOKEN_FORMATS).describe('`opaque`: `ho_` tokens its server introspects. `jwt`: RFC 9068 JWT access tokens verified with the JWKS'),
  clientId: z.string().regex(/^rs_[0-9a-f]{20}$/).describe('The client id its server authenticates with at the introspection endpoint (HTTP Basic)'),
  secretLastFour: z.string().regex(/^[0-9A-Za-z]{4}$/).describe('The last four characters of its introspection secret, to tell which one a server holds'),
  metadataUrl: z.string().describe('Its protected resource metadata (RFC 9728), which its server serves (or links to) at its own `/.well-known/oauth-protected-resource…`').meta({ format: 'uri' }),
  introspectionEndpoint: z.string().describe('Where its server introspects the tokens bound to it (RFC 7662), with `clientId` and its secret').meta({ format: 'uri' }),
  createdAt: timestamp,
  updatedAt: timestamp,
});
export type ResourceJson = z.infer<typeof resourceJson>;

/** A resource just made, or given a new secret: the secret in plain, this once. */
export const resourceWithSecretJson = resourceJson.extend({
  clientSecret: z.string().regex(tokenPattern('hs_')).describe('The introspection secret, shown in this response only: the service keeps a digest'),
});
export type ResourceWithSecretJson = z.infer<typeof resourceWithSecretJson>;

export function presentResource(resource: PresentableResource, links: ResourceLinks): ResourceJson {
  return {
    id: resource.id,
    identifier: resource.identifier,
    name: resource.name,
    scopes: resource.scopes.map((s) => ({ name: s.name, description: s.description })),
    tokenFormat: resource.tokenFormat,
    clientId: resource.clientId,
    secretLastFour: resource.secretLastFour,
    metadataUrl: links.metadataUrl,
    introspectionEndpoint: links.introspectionEndpoint,
    createdAt: toIso(resource.createdAt)!,
    updatedAt: toIso(resource.updatedAt)!,
  };
}

export function presentResourceWithSecret(resource: PresentableResource, links: ResourceLinks, secret: string): ResourceWithSecretJson {
  return { ...presentResource(resource, links), clientSecret: secret };
}
