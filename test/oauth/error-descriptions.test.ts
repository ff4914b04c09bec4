import { expect } from 'chai';
import { call } from '../helpers/api.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { makeClient, type Client } from '../helpers/factories.js';
import { authorizeUrl, basicAuth } from '../helpers/oauth.js';

/**
 * Every OAuth error carries error_description beside error, wherever it goes back to the client,
 * also for the errors the library throws without words (found by test/edge/fuzz.test.ts).
 */
describeEachProfile('OAuth errors always carry error_description', (profile) => {
  const idp = useIdp(profile);
  let app: Client;

  before(async () => {
    app = await makeClient(idp.db);
  });

  const authorizeWith = (extra: Record<string, string>) =>
    fetch(authorizeUrl(idp.url, { clientId: app.clientId, redirectUri: app.redirectUri, extra }), { redirect: 'manual' });

  it('describes request_uri_not_supported at the pushed authorization request endpoint', async () => {
    const res = await call(idp, '/login/oauth/par', {
      method: 'POST',
      authorization: basicAuth(app.clientId, app.clientSecret),
      form: { client_id: app.clientId, redirect_uri: app.redirectUri, response_type: 'code', state: 's', request_uri: 'urn:x' },
    });
    expect(res.status).to.equal(400);
    expect(res.body.error).to.equal('request_uri_not_supported');
    expect(res.body.error_description).to.match(/^request_uri is taken only at the authorization endpoint/);
  });

  it('describes request_not_supported in the redirect of an authorization request with a request object', async () => {
    const res = await authorizeWith({ request: 'eyJhbGciOiJub25lIn0.e30.' });
    const location = new URL(res.headers.get('location') ?? '');
    expect(location.href.startsWith(app.redirectUri)).to.equal(true);
    expect(location.searchParams.get('error')).to.equal('request_not_supported');
    expect(location.searchParams.get('error_description')).to.equal('the request parameter (a request object) is not supported');
    expect(location.searchParams.get('state')).to.equal('state-123');
  });

  it('describes registration_not_supported in the fragment when the response mode is fragment', async () => {
    const res = await authorizeWith({ registration: '{}', response_mode: 'fragment' });
    const location = new URL(res.headers.get('location') ?? '');
    const fragment = new URLSearchParams(location.hash.slice(1));
    expect(fragment.get('error')).to.equal('registration_not_supported');
    expect(fragment.get('error_description')).to.equal('the registration parameter is not supported');
  });

  it('describes request_uri_not_supported in a form_post answer', async () => {
    const res = await authorizeWith({ request_uri: 'urn:x', response_mode: 'form_post' });
    const page = await res.text();
    expect(page).to.contain('<input type="hidden" name="error" value="request_uri_not_supported"/>');
    expect(page).to.match(/<input type="hidden" name="error_description" value="request_uri is taken only at the authorization endpoint[^"]*"\/>/);
  });

  it('leaves a description the library gave as it was', async () => {
    const res = await authorizeWith({ prompt: 'none' });
    const location = new URL(res.headers.get('location') ?? '');
    expect(location.searchParams.getAll('error_description')).to.deep.equal(['End-User authentication is required']);
  });
});
