import { expect } from 'chai';
import * as client from 'openid-client';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { Browser } from '../helpers/browser.js';
import { makeApp, makeGroup, makeUser, type TestUser } from '../helpers/factories.js';
import { formAction, unescapeHtml } from '../helpers/html.js';
import { authorizeUrl, callbackOf, passProvider } from '../helpers/oauth.js';

const REDIRECT_URI = 'http://127.0.0.1:9999/par/callback';
const insecure = { execute: [client.allowInsecureRequests] };

/**
 * Pushed authorization requests (RFC 9126): a client pushes its request to /login/oauth/par and
 * sends only the request_uri to authorize; an application may require it, and then a plain
 * authorization request is refused.
 */
describeEachProfile('Pushed authorization requests', (profile) => {
  const idp = useIdp(profile);
  let user: TestUser;
  let owner: TestUser;

  before(async () => {
    owner = await makeUser(idp.db);
    user = await makeUser(idp.db);
  });

  async function appConfig(requirePushedAuthorizationRequests: boolean) {
    const group = await makeGroup(idp.db, owner.id);
    const app = await makeApp(idp.db, owner.id, group.id, { callbackURL: REDIRECT_URI, requirePushedAuthorizationRequests });
    const config = await client.discovery(new URL(idp.url), app.clientId, app.clientSecret, undefined, insecure);
    return { app, config };
  }

  it('advertises the PAR endpoint, and no server-wide requirement', async () => {
    const { config } = await appConfig(false);
    expect(config.serverMetadata().pushed_authorization_request_endpoint).to.equal(`${idp.url}/login/oauth/par`);
    expect(config.serverMetadata().require_pushed_authorization_requests).to.equal(undefined);
  });

  it('runs the code flow with openid-client through PAR, for an application that requires it', async () => {
    const { config } = await appConfig(true);
    const state = client.randomState();
    const url = await client.buildAuthorizationUrlWithPAR(config, { redirect_uri: REDIRECT_URI, scope: 'openid groups:read-only', state });
    expect([...url.searchParams.keys()].sort()).to.deep.equal(['client_id', 'request_uri']);
    expect(url.searchParams.get('request_uri')).to.match(/^urn:ietf:params:oauth:request_uri:/);
    const page = await passProvider(new Browser(idp.url), url.href, user, { callback: REDIRECT_URI });
    const callback = callbackOf(page, REDIRECT_URI);
    const tokens = await client.authorizationCodeGrant(config, callback, { expectedState: state });
    expect(tokens.access_token).to.match(/^ho_/);
    expect(tokens.refresh_token).to.match(/^hr_/);
    expect(tokens.claims()!.sub).to.equal(String(user.id));
  });

  it('refuses a plain authorization request of an application that requires PAR: invalid_request back at its callback', async () => {
    const { app } = await appConfig(true);
    const page = await new Browser(idp.url).get(authorizeUrl(idp.url, { clientId: app.clientId, redirectUri: REDIRECT_URI, state: 'plain' })).expect(302);
    const callback = callbackOf(page, REDIRECT_URI);
    expect(callback.searchParams.get('error')).to.equal('invalid_request');
    expect(callback.searchParams.get('error_description')).to.equal('Pushed Authorization Request must be used');
    expect(callback.searchParams.get('state')).to.equal('plain');
    expect(callback.searchParams.get('code')).to.equal(null);
  });

  it('takes a plain authorization request of an application that does not require PAR', async () => {
    const { app } = await appConfig(false);
    const page = await passProvider(new Browser(idp.url), authorizeUrl(idp.url, { clientId: app.clientId, redirectUri: REDIRECT_URI }), user, { callback: REDIRECT_URI });
    expect(callbackOf(page, REDIRECT_URI).searchParams.get('code')).to.be.a('string');
  });

  /** Opens `url` in a new browser, signs in as `user` on the flow's page, and returns the consent page it leads to. */
  async function consentPageOf(url: string) {
    const browser = new Browser(idp.url);
    const signInPage = await browser.follow(url).expect(200);
    const consent = await browser.follow(await browser.submit(formAction(signInPage.text, '/login'), { login: user.username, password: user.password })).expect(200);
    expect(consent.text).to.include('/confirm"');
    return consent.text;
  }

  it('shows no words of the client on the consent page: an ignored_scope it pushes is dropped, as at a plain authorize', async () => {
    const { config } = await appConfig(true);
    const words = 'Horizon staff approved this app, call 555 0100 to verify';
    const url = await client.buildAuthorizationUrlWithPAR(config, { redirect_uri: REDIRECT_URI, scope: 'groups:read-only', state: 's', ignored_scope: words });
    const page = await consentPageOf(url.href);
    expect(unescapeHtml(page)).to.not.include('555 0100');
    expect(page).to.not.include('data-testid="ignored-scopes"');
  });

  it('reads a pushed request’s scopes as a plain authorize does: unknown ones named as ignored, the default added', async () => {
    const { config } = await appConfig(true);
    const url = await client.buildAuthorizationUrlWithPAR(config, { redirect_uri: REDIRECT_URI, scope: 'user,repo', state: 's' });
    const page = await consentPageOf(url.href);
    expect(/data-testid="ignored-scopes">([\s\S]*?)<\/p>/.exec(page)?.[1]).to.include('<span class="scope">user</span>, <span class="scope">repo</span>');
    expect(page).to.include('<span class="scope">groups:read-only</span>');
  });

  it('refuses a pushed request with another redirect_uri than the registered one', async () => {
    const { config } = await appConfig(true);
    try {
      await client.buildAuthorizationUrlWithPAR(config, { redirect_uri: 'https://elsewhere.example/cb', scope: 'groups:read-only', state: 's' });
      expect.fail('the request was pushed');
    } catch (err) {
      expect((err as { error?: string }).error).to.equal('invalid_request');
      expect((err as { error_description?: string }).error_description).to.match(/redirect_uri/);
    }
  });
});
