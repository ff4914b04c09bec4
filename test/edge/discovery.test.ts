import { expect } from 'chai';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { CALLBACK, makeClient } from '../helpers/factories.js';

/** Discovery advertises only what works end to end. */
describeEachProfile('honest discovery', (profile) => {
  const server = useIdp(profile);
  let doc: Record<string, unknown>;

  before(async () => {
    doc = (await (await fetch(`${server.url}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
  });

  it('serves the same metadata at the RFC 8414 address', async () => {
    const res = await fetch(`${server.url}/.well-known/oauth-authorization-server`);
    expect(res.status).to.equal(200);
    const metadata = (await res.json()) as Record<string, unknown>;
    expect(metadata.issuer).to.equal(server.url);
    expect(metadata.token_endpoint).to.equal(doc.token_endpoint);
    expect(metadata.authorization_endpoint).to.equal(doc.authorization_endpoint);
  });

  it('advertises DPoP with the algorithms the token endpoint and the API accept', () => {
    expect(Object.keys(doc).filter((key) => key.startsWith('dpop'))).to.deep.equal(['dpop_signing_alg_values_supported']);
    expect(doc.dpop_signing_alg_values_supported).to.deep.equal(['ES256', 'Ed25519', 'EdDSA']);
  });

  it('advertises pushed authorization requests and the device flow at their routes, required of no client by default', () => {
    expect(doc.pushed_authorization_request_endpoint).to.equal(`${server.url}/login/oauth/par`);
    expect(doc.require_pushed_authorization_requests).to.equal(undefined);
    expect(doc.device_authorization_endpoint).to.equal(`${server.url}/login/oauth/device/code`);
  });

  it('answers a `resource` (RFC 8707) that no group registered with invalid_target, back to the client', async () => {
    const app = await makeClient(server.db);
    const query = new URLSearchParams({ client_id: app.clientId, redirect_uri: CALLBACK, state: 's', resource: 'https://api.example.test/' });
    const res = await fetch(`${server.url}/login/oauth/authorize?${query}`, { redirect: 'manual' });
    expect(res.status).to.equal(302);
    const back = new URL(res.headers.get('location')!);
    expect(back.href.startsWith(CALLBACK)).to.equal(true);
    expect(back.searchParams.get('error')).to.equal('invalid_target');
    expect(back.searchParams.get('state')).to.equal('s');
  });

  it('names no registration endpoint and no metadata-document support while an administrator has not turned them on', () => {
    expect(doc).not.to.have.property('registration_endpoint');
    expect(doc).not.to.have.property('client_id_metadata_document_supported');
    expect(doc.code_challenge_methods_supported).to.deep.equal(['S256']);
  });

  it('answers a pushed authorization request at /login/oauth/par only', async () => {
    const app = await makeClient(server.db);
    for (const [path, status] of [['/request', 404], ['/login/oauth/par', 201]] as const) {
      const res = await fetch(`${server.url}${path}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${app.clientId}:${app.clientSecret}`).toString('base64')}`,
        },
        body: new URLSearchParams({ response_type: 'code', client_id: app.clientId, redirect_uri: CALLBACK, scope: 'openid', state: 's' }).toString(),
      });
      expect(res.status, path).to.equal(status);
    }
  });

  it('reads a DPoP proof at the token endpoint: an unparseable one is invalid_dpop_proof', async () => {
    const app = await makeClient(server.db);
    const res = await fetch(`${server.url}/login/oauth/access_token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', dpop: 'not-a-jwt' },
      body: new URLSearchParams({ code: 'unknown', client_id: app.clientId, client_secret: app.clientSecret, redirect_uri: CALLBACK }).toString(),
    });
    const body = (await res.json()) as { error: string };
    expect(res.status).to.equal(400);
    expect(body.error).to.equal('invalid_dpop_proof');
  });
});
