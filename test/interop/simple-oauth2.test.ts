import { expect } from 'chai';
import { AuthorizationCode } from 'simple-oauth2';
import { profiles, startIdp, type RunningIdp } from '../helpers/app.js';
import { UserAgent } from '../helpers/browser-less.js';
import { makeApp, makeGroup, makeUser } from '../helpers/factories.js';
import { runAuthorization } from '../helpers/oauth.js';

const REDIRECT_URI = 'http://localhost:9999/simple-oauth2/callback';

for (const profile of profiles()) {
  describe(`simple-oauth2 against the provider (${profile})`, () => {
    let server: RunningIdp;

    before(async () => {
      server = await startIdp(profile);
    });
    after(() => server.stop());

    it('completes the authorization code flow with HTTP Basic client authentication and calls the API', async () => {
      const user = await makeUser(server.idp.db);
      const group = await makeGroup(server.idp.db, user.id);
      const app = await makeApp(server.idp.db, user.id, group.id, { callbackURL: REDIRECT_URI });
      const oauth = new AuthorizationCode({
        client: { id: app.clientId, secret: app.clientSecret },
        auth: { tokenHost: server.url, tokenPath: '/login/oauth/access_token', authorizePath: '/login/oauth/authorize' },
      });
      const url = new URL(oauth.authorizeURL({ redirect_uri: REDIRECT_URI, scope: 'groups:read-only', state: 'simple-state' }));
      const callback = await runAuthorization(new UserAgent(server.url), {
        clientId: url.searchParams.get('client_id')!,
        redirectUri: REDIRECT_URI,
        state: url.searchParams.get('state')!,
        scope: url.searchParams.get('scope')!,
        login: { login: user.username, password: user.password },
      });
      expect(callback.searchParams.get('state')).to.equal('simple-state');

      const token = await oauth.getToken({ code: callback.searchParams.get('code')!, redirect_uri: REDIRECT_URI });
      expect(token.token.access_token).to.match(/^ho_/);
      expect(token.token.expire_in).to.equal('3600');

      const res = await fetch(`${server.url}/apis/v2/groups`, { headers: { authorization: `Bearer ${token.token.access_token}` } });
      const body = (await res.json()) as { data: { items: Array<{ id: number }> } };
      expect(body.data.items.map((g) => g.id)).to.deep.equal([group.id]);

      const refreshed = await token.refresh();
      expect(refreshed.token.access_token).to.match(/^ho_/);
    });
  });
}
