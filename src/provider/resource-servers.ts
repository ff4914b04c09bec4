import type { Knex } from 'knex';
import { errors, type Client, type KoaContextWithOIDC, type ResourceServer } from 'oidc-provider';
import { registeredResource } from '../services/resources/lookup.js';

/**
 * RFC 8707 resource indicators: a client names the API it wants a token for with
 * `resource=<identifier>` at authorize and at the token endpoint. Any client may ask for any
 * registered resource (a resource is how a group lets third-party clients, MCP clients among them,
 * reach its server); the person still consents to the resource's scopes by name. The token is bound
 * to that one resource (`aud`), carries only its scopes, and is made in the resource's format. An
 * identifier no group registered is `invalid_target`. A request without `resource` is the
 * service's own, as before: a token for userinfo and the service's API.
 */
export function resourceServerInfo(db: Knex) {
  return async function getResourceServerInfo(_ctx: KoaContextWithOIDC, indicator: string, _client: Client): Promise<ResourceServer> {
    // Clients send the identifier as typed or in its normal form (https://tools.example.com or …/); both name it.
    const resource = await registeredResource(db, indicator);
    if (!resource) throw new errors.InvalidTarget('no resource is registered with this identifier');
    return {
      scope: resource.scopes.map((s) => s.name).join(' '),
      audience: resource.identifier,
      accessTokenFormat: resource.tokenFormat,
      // RFC 9068 §2.1: signed with the keys the JWKS publishes, RS256 as every other signature here.
      ...(resource.tokenFormat === 'jwt' ? { jwt: { sign: { alg: 'RS256' } } } : {}),
    };
  };
}

/**
 * Who may introspect a token: the client it was issued to, and the server of the one resource it
 * is bound to (its introspection credentials are a client whose `resource_identifier` is that
 * resource, clients.ts). A token of one resource is inactive to every other resource's server.
 */
export async function introspectionAllowed(_ctx: KoaContextWithOIDC, client: Client, token: { clientId?: string; aud?: string | string[] }): Promise<boolean> {
  const resource = (client as Client & { resource_identifier?: string }).resource_identifier;
  if (resource === undefined) return token.clientId === client.clientId;
  return token.aud === resource || (Array.isArray(token.aud) && token.aud.length === 1 && token.aud[0] === resource);
}
