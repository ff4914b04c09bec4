import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ExpressAuth, getSession, type ExpressAuthConfig } from '@auth/express';
import { expect } from 'chai';
import express from 'express';
import { updateApplication } from '../../src/services/apps.js';
import { profiles, startIdp, type RunningIdp } from '../helpers/app.js';
import { UserAgent } from '../helpers/browser-less.js';
import { appAccess, makeApp, makeGroup, makeUser } from '../helpers/factories.js';
import { completeAuthorization } from '../helpers/oauth.js';

/**
 * Auth.js (@auth/express) with its generic OpenID Connect provider and default options: it
 * discovers the provider, sends PKCE, exchanges the code with HTTP Basic, and builds its user
 * from the ID token. The test plays the browser between the two sites.
 */
interface AuthJsSite {
  url: string;
  config: ExpressAuthConfig;
  close(): Promise<void>;
}

async function startAuthJsSite(port: number, issuer: string, clientId: string, clientSecret: string): Promise<AuthJsSite> {
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
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(port, '127.0.0.1', () => resolve(s));
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    config,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A free loopback port: the application's callback URL must name it before the site starts. */
async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

for (const profile of profiles()) {
  describe(`Auth.js (@auth/express) against the provider (${profile})`, function () {
    this.timeout(30_000);
    let server: RunningIdp;
    let site: AuthJsSite;
    let user: Awaited<ReturnType<typeof makeUser>>;

    before(async () => {
      server = await startIdp(profile);
      user = await makeUser(server.idp.db, { name: 'Ada Lovelace' });
      const group = await makeGroup(server.idp.db, user.id);
      const port = await freePort();
      const app = await makeApp(server.idp.db, user.id, group.id, { callbackURL: `http://127.0.0.1:${port}/auth/callback/horizon` });
      await updateApplication(server.idp.db, await appAccess(server.idp.db, user.id, app.clientId), { signOutRedirectURLs: [`http://127.0.0.1:${port}/`] });
      site = await startAuthJsSite(port, server.url, app.clientId, app.clientSecret);
    });
    after(async () => {
      await site?.close();
      await server?.stop();
    });

    it('signs in with the default options, and the session\'s user has the name and e-mail', async () => {
      const atSite = new UserAgent(site.url);
      const atIdp = new UserAgent(server.url);

      const { csrfToken } = (await (await atSite.get('/auth/csrf')).json()) as { csrfToken: string };
      const start = await atSite.postForm('/auth/signin/horizon', { csrfToken, callbackUrl: `${site.url}/me` });
      expect(start.status, await start.text()).to.equal(302);
      const authorize = new URL(start.headers.get('location')!);
      expect(`${authorize.origin}${authorize.pathname}`).to.equal(`${server.url}/login/oauth/authorize`);
      expect(authorize.searchParams.get('scope')).to.equal('openid profile email');
      expect(authorize.searchParams.get('code_challenge_method')).to.equal('S256');

      const callback = await completeAuthorization(atIdp, authorize.toString(), {
        redirectUri: `${site.url}/auth/callback/horizon`,
        login: { login: user.username, password: user.password },
      });
      expect(callback.searchParams.get('error'), callback.toString()).to.equal(null);

      const landed = await atSite.get(`${callback.pathname}${callback.search}`);
      expect(landed.status, await landed.text()).to.equal(302);
      expect(landed.headers.get('location')).to.equal(`${site.url}/me`);

      const { session } = (await (await atSite.get('/me')).json()) as { session: { user?: Record<string, unknown> } | null };
      expect(session?.user).to.include({ name: 'Ada Lovelace', email: user.email });
    });
  });
}
