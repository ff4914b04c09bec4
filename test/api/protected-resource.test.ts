import { expect } from 'chai';
import { call } from '../helpers/api.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { makeUser, personalToken } from '../helpers/factories.js';

/** The value of one parameter of a WWW-Authenticate challenge, as a client parses it. */
function challengeParam(header: string, name: string): string | undefined {
  return new RegExp(`(?:^|[ ,])${name}="([^"]*)"`).exec(header)?.[1];
}

/**
 * OAuth 2.0 Protected Resource Metadata (RFC 9728) of /apis/v2: what a client that meets the API
 * without a token (an MCP client) follows to find where tokens come from.
 */
describeEachProfile('The API\'s protected resource metadata (RFC 9728)', (profile) => {
  const idp = useIdp(profile);

  it('leads a client from a 401 to the authorization server that issues the API\'s tokens', async () => {
    const refused = await call(idp, '/apis/v2/user');
    expect(refused.status).to.equal(401);
    const metadataUrl = challengeParam(refused.headers.get('www-authenticate') ?? '', 'resource_metadata');
    expect(metadataUrl).to.equal(`${idp.url}/.well-known/oauth-protected-resource/apis/v2`);

    const metadata = await fetch(metadataUrl!);
    expect(metadata.status).to.equal(200);
    expect(metadata.headers.get('content-type')).to.match(/^application\/json/);
    const document = (await metadata.json()) as Record<string, unknown>;
    // RFC 9728 §3.3: the resource named in the document is the one whose metadata was asked for.
    expect(document.resource).to.equal(`${idp.url}/apis/v2`);
    expect(document).to.deep.include({
      authorization_servers: [idp.url],
      scopes_supported: ['groups:read-only', 'groups:read-write'],
      bearer_methods_supported: ['header'],
      resource_documentation: `${idp.url}/apis/v2/docs`,
    });

    // The authorization server's own metadata (RFC 8414), where the client goes next.
    const server = await fetch(`${(document.authorization_servers as string[])[0]}/.well-known/oauth-authorization-server`);
    expect(server.status).to.equal(200);
    const serverMetadata = (await server.json()) as Record<string, unknown>;
    expect(serverMetadata.issuer).to.equal(idp.url);
    expect(serverMetadata.code_challenge_methods_supported).to.include('S256');
    for (const scope of document.scopes_supported as string[]) expect(serverMetadata.scopes_supported).to.include(scope);
  });

  it('names the metadata in a 403 for a missing scope too', async () => {
    const user = await makeUser(idp.db);
    const res = await call(idp, '/apis/v2/admin/users', { token: await personalToken(idp.db, user.id, { scopes: ['groups:read-only'] }) });
    expect(res.status).to.equal(403);
    expect(challengeParam(res.headers.get('www-authenticate') ?? '', 'resource_metadata')).to.equal(`${idp.url}/.well-known/oauth-protected-resource/apis/v2`);
  });

  it('may be read from any origin, and only read', async () => {
    const res = await fetch(`${idp.url}/.well-known/oauth-protected-resource/apis/v2`, { headers: { Origin: 'https://agent.example' } });
    expect(res.headers.get('access-control-allow-origin')).to.equal('*');
    const post = await call(idp, '/.well-known/oauth-protected-resource/apis/v2', { method: 'POST' });
    expect(post.status).to.equal(405);
    expect(post.headers.get('allow')).to.equal('GET, HEAD');
  });
});
