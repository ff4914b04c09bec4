import { randomBytes } from 'node:crypto';
import { ExpressAuth, getSession, type ExpressAuthConfig } from '@auth/express';
import { expect } from 'chai';
import express from 'express';
import { updateApplication } from '../../src/services/apps.js';
import { describeEachProfile, listen, useIdp } from '../helpers/app.js';
import { Browser } from '../helpers/browser.js';
import { appAccess, makeClient, makeUser, type TestUser } from '../helpers/factories.js';
import { setEmailVerified } from '../helpers/email-verification.js';
import { callbackOf, passProvider } from '../helpers/oauth.js';

/**
 * Auth.js (@auth/express) with its generic OpenID Connect provider and default options: it
 * discovers the provider, sends PKCE, exchanges the code with HTTP Basic, and builds its user
 * from the ID token. The test plays the browser between the two sites.
 */
function authJsSite(issuer: string, clientId: string, clientSecret: string): express.Express {
  const config: ExpressAuthConfig = {
    providers: [{ id: 'horizon', name: 'Horizon ID', type: 'oidc', issuer, clientId, clientSecret }],
    secret: randomBytes(32).toString('hex'),
    trustHost: true,
  };
  const app = express();
  app.use('/auth/*', ExpressAuth(config));
  app.get('/me', async (req, res) => {
    res.json({ session: await getSession(req, config) });
  });
  return app;
}

describeEachProfile('Auth.js (@auth/express) against the provider', function (profile) {
  this.timeout(30_000);
  const server = useIdp(profile);
  let site: Awaited<ReturnType<typeof listen>>;
  let user: TestUser;

  before(async () => {
    // The site listens first: the application's callback URL names its port.
    site = await listen();
    user = await makeUser(server.db, { name: 'Ada Lovelace' });
    // The address is released (ID token, userinfo) only once verified.
    await setEmailVerified(server.db, user, true);
    const app = await makeClient(server.db, { user, redirectUri: `${site.url}/auth/callback/horizon` });
    await updateApplication(server.db, server.idp.provider, await appAccess(server.db, user.id, app.clientId), { signOutRedirectURLs: [`${site.url}/`] });
    site.server.on('request', authJsSite(server.url, app.clientId, app.clientSecret));
  });
  after(() => site?.close());

  it('signs in with the default options, and the session\'s user has the name and e-mail', async () => {
    const atSite = new Browser(site.url);
    const atIdp = new Browser(server.url);

    const { csrfToken } = JSON.parse((await atSite.get('/auth/csrf')).text) as { csrfToken: string };
    const start = await atSite.postForm('/auth/signin/horizon', { csrfToken, callbackUrl: `${site.url}/me` });
    expect(start.status, start.text).to.equal(302);
    const authorize = new URL(start.headers.get('location')!);
    expect(`${authorize.origin}${authorize.pathname}`).to.equal(`${server.url}/login/oauth/authorize`);
    expect(authorize.searchParams.get('scope')).to.equal('openid profile email');
    expect(authorize.searchParams.get('code_challenge_method')).to.equal('S256');

    const redirectUri = `${site.url}/auth/callback/horizon`;
    const callback = callbackOf(await passProvider(atIdp, authorize.toString(), user, { callback: redirectUri }), redirectUri);
    expect(callback.searchParams.get('error'), callback.toString()).to.equal(null);

    const landed = await atSite.get(`${callback.pathname}${callback.search}`);
    expect(landed.status, landed.text).to.equal(302);
    expect(landed.headers.get('location')).to.equal(`${site.url}/me`);

    const { session } = JSON.parse((await atSite.get('/me')).text) as { session: { user?: Record<string, unknown> } | null };
    expect(session?.user).to.include({ name: 'Ada Lovelace', email: user.email });
  });
});
