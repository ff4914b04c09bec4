import { expect } from 'chai';
import { AuthorizationCode } from 'simple-oauth2';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { Browser } from '../helpers/browser.js';
import { makeClient } from '../helpers/factories.js';
import { authorize } from '../helpers/oauth.js';

const REDIRECT_URI = 'http://localhost:9999/simple-oauth2/callback';

describeEachProfile('simple-oauth2 against the provider', (profile) => {
  const server = useIdp(profile);

  it('completes the authorization code flow with HTTP Basic client authentication and calls the API', async () => {
    const app = await makeClient(server.db, { redirectUri: REDIRECT_URI });
    const oauth = new AuthorizationCode({
      client: { id: app.clientId, secret: app.clientSecret },
      auth: { tokenHost: server.url, tokenPath: '/login/oauth/access_token', authorizePath: '/login/oauth/authorize' },
    });
    const url = new URL(oauth.authorizeURL({ redirect_uri: REDIRECT_URI, scope: 'groups:read-only', state: 'simple-state' }));
    const callback = await authorize(
      new Browser(server.url),
      { clientId: url.searchParams.get('client_id')!, redirectUri: REDIRECT_URI, state: url.searchParams.get('state')!, scope: url.searchParams.get('scope')! },
      app.user,
    );
    expect(callback.searchParams.get('state')).to.equal('simple-state');

    const token = await oauth.getToken({ code: callback.searchParams.get('code')!, redirect_uri: REDIRECT_URI });
    expect(token.token.access_token).to.match(/^ho_/);
    expect(token.token.expire_in).to.equal('3600');

    const res = await fetch(`${server.url}/apis/v2/groups`, { headers: { authorization: `Bearer ${token.token.access_token}` } });
    const body = (await res.json()) as { data: { items: Array<{ id: number }> } };
    expect(body.data.items.map((g) => g.id)).to.deep.equal([app.group.id]);

    const refreshed = await token.refresh();
    expect(refreshed.token.access_token).to.match(/^ho_/);
  });
});
