import { expect } from 'chai';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { Browser, signIn, type Page } from '../helpers/browser.js';
import { makeClient, type Client } from '../helpers/factories.js';

/** The RFC 6749 §4.1.2.1 error codes an authorization endpoint may redirect with. */
const RFC6749_AUTHORIZE_ERRORS = ['invalid_request', 'unauthorized_client', 'access_denied', 'unsupported_response_type', 'invalid_scope', 'server_error', 'temporarily_unavailable'];

/** Which bad authorize requests are a page, and which go back to the client. */
describeEachProfile('GET /login/oauth/authorize errors', (profile) => {
  const server = useIdp(profile);
  let fx: Client;

  before(async () => {
    fx = await makeClient(server.db);
  });

  /** GET in a browser of its own: no cookies, no redirect followed. */
  const getManual = (url: string) => new Browser(server.url).get(url);

  function authorizeUrl(params: Record<string, string | undefined>): string {
    const defined = Object.entries(params).filter((e): e is [string, string] => e[1] !== undefined);
    return `${server.url}/login/oauth/authorize?${new URLSearchParams(defined)}`;
  }

  function valid(overrides: Record<string, string | undefined> = {}): string {
    return authorizeUrl({ client_id: fx.clientId, redirect_uri: fx.redirectUri, state: 'st-1', ...overrides });
  }

  function expectErrorPage(res: Page): string {
    const html = res.text;
    expect(res.status, html).to.equal(400);
    expect(res.headers.get('location')).to.equal(null);
    expect(res.headers.get('content-type')).to.match(/^text\/html/);
    expect(html).to.match(/<html/i);
    expect(html).not.to.match(/\bat [^\n]+\.(js|ts):\d+/); // no stack trace
    return html;
  }

  /** The callback URL the server redirected to, checked to be the registered one. */
  function callbackOf(res: Page): URL {
    expect(res.status).to.equal(302);
    const location = res.headers.get('location');
    expect(location).to.be.a('string');
    const url = new URL(location!);
    expect(`${url.origin}${url.pathname}`).to.equal(fx.redirectUri);
    return url;
  }

  describe('requests answered with a 400 page, never a redirect', () => {
    it('shows a 400 page for an unknown client_id', async () => {
      const html = expectErrorPage(await getManual(valid({ client_id: 'no-such-client' })));
      expect(html).to.match(/client/i);
    });

    it('shows a signed-in person their name in the header of the 400 page, not "Sign in"', async () => {
      const browser = await signIn(server.url, fx.user);
      const html = expectErrorPage(await browser.get(valid({ client_id: 'no-such-client' })));
      expect(html).to.match(new RegExp(`<span class="who"[^>]*>${fx.user.username}</span>`));
      expect(html).not.to.include('<a href="/login">Sign in</a>');
      expect(html).to.include('<a href="/login/oauth/logout">Sign out</a>');
    });

    it('shows a 400 page for a missing client_id', async () => {
      expectErrorPage(await getManual(valid({ client_id: undefined })));
    });

    it('shows a 400 page for a missing redirect_uri', async () => {
      const html = expectErrorPage(await getManual(valid({ redirect_uri: undefined })));
      expect(html).to.include('redirect_uri');
    });

    it('shows a 400 page for a missing redirect_uri even when state is missing too', async () => {
      expectErrorPage(await getManual(valid({ redirect_uri: undefined, state: undefined })));
    });

    const mismatches: Record<string, string> = {
      'an extra path segment': 'http://127.0.0.1:9999/callback/extra',
      'an extra query parameter': 'http://127.0.0.1:9999/callback?extra=1',
      'a trailing slash': 'http://127.0.0.1:9999/callback/',
      'a different port': 'http://127.0.0.1:9998/callback',
      'a different case in the path': 'http://127.0.0.1:9999/Callback',
      'a different host spelling (localhost)': 'http://localhost:9999/callback',
      'a fragment': 'http://127.0.0.1:9999/callback#frag',
    };
    for (const [what, redirectUri] of Object.entries(mismatches)) {
      it(`shows a 400 page for a redirect_uri with ${what}`, async () => {
        const html = expectErrorPage(await getManual(valid({ redirect_uri: redirectUri })));
        expect(html).to.include('redirect_uri');
      });
    }

    it('shows a 400 page (not a redirect) for a mismatched redirect_uri that also lacks state', async () => {
      expectErrorPage(await getManual(valid({ redirect_uri: 'http://127.0.0.1:9999/other', state: undefined })));
    });

    it('shows a 400 page (not a redirect) for a mismatched redirect_uri with an unsupported response_type', async () => {
      expectErrorPage(await getManual(valid({ redirect_uri: 'http://127.0.0.1:9999/other', response_type: 'token' })));
    });
  });

  describe('requests redirected back to the client with an error', () => {
    it('redirects a request without state with invalid_request, a description naming state, and no state', async () => {
      const callback = callbackOf(await getManual(valid({ state: undefined })));
      expect(callback.searchParams.get('error')).to.equal('invalid_request');
      expect(callback.searchParams.get('error_description')).to.include('state');
      expect(callback.searchParams.has('state')).to.equal(false);
      expect(callback.searchParams.has('code')).to.equal(false);
    });

    it('redirects a request with a nonce but without the openid scope and without state with invalid_request (a nonce only binds an ID token)', async () => {
      const callback = callbackOf(await getManual(valid({ state: undefined, scope: 'groups:read-only', nonce: 'n-0S6_WzA2Mj' })));
      expect(callback.searchParams.get('error')).to.equal('invalid_request');
      // The library names the missing openid scope first; without it, the missing state.
      expect(callback.searchParams.get('error_description')).to.match(/openid|state/);
      expect(callback.searchParams.has('code')).to.equal(false);
    });

    it('redirects an OpenID Connect request without state, nonce or PKCE challenge as a missing state', async () => {
      const callback = callbackOf(await getManual(valid({ state: undefined, scope: 'openid groups:read-only' })));
      expect(callback.searchParams.get('error')).to.equal('invalid_request');
      expect(callback.searchParams.get('error_description')).to.include('state');
    });

    it('redirects a request with an empty state as a missing state', async () => {
      const callback = callbackOf(await getManual(valid({ state: '' })));
      expect(callback.searchParams.get('error')).to.equal('invalid_request');
      expect(callback.searchParams.get('error_description')).to.include('state');
    });

    it('names the issuer in an error redirect (RFC 9207)', async () => {
      const callback = callbackOf(await getManual(valid({ state: undefined })));
      expect(callback.searchParams.get('iss')).to.equal(server.url);
    });

    it('redirects code_challenge_method=plain with invalid_request and the state', async () => {
      const challenge = 'a'.repeat(43);
      const callback = callbackOf(await getManual(valid({ code_challenge: challenge, code_challenge_method: 'plain' })));
      expect(callback.searchParams.get('error')).to.equal('invalid_request');
      expect(callback.searchParams.get('error_description')).to.include('code_challenge_method');
      expect(callback.searchParams.get('state')).to.equal('st-1');
    });

    it('redirects a code_challenge that is too short with invalid_request and the state', async () => {
      const callback = callbackOf(await getManual(valid({ code_challenge: 'short', code_challenge_method: 'S256' })));
      expect(callback.searchParams.get('error')).to.equal('invalid_request');
      expect(callback.searchParams.get('error_description')).to.include('code_challenge');
      expect(callback.searchParams.get('state')).to.equal('st-1');
    });

    it('redirects a code_challenge with characters outside the PKCE alphabet with invalid_request and the state', async () => {
      const callback = callbackOf(await getManual(valid({ code_challenge: `${'a'.repeat(42)}+/=`, code_challenge_method: 'S256' })));
      expect(callback.searchParams.get('error')).to.equal('invalid_request');
      expect(callback.searchParams.get('error_description')).to.include('code_challenge');
      expect(callback.searchParams.get('state')).to.equal('st-1');
    });

    it('redirects a code_challenge without code_challenge_method with invalid_request and the state', async () => {
      const callback = callbackOf(await getManual(valid({ code_challenge: 'a'.repeat(43) })));
      expect(callback.searchParams.get('error')).to.equal('invalid_request');
      expect(callback.searchParams.get('error_description')).to.include('code_challenge_method');
      expect(callback.searchParams.get('state')).to.equal('st-1');
    });

    it('redirects code_challenge_method=S256 without a code_challenge with invalid_request and the state', async () => {
      const callback = callbackOf(await getManual(valid({ code_challenge_method: 'S256' })));
      expect(callback.searchParams.get('error')).to.equal('invalid_request');
      expect(callback.searchParams.get('error_description')).to.include('code_challenge');
      expect(callback.searchParams.get('state')).to.equal('st-1');
    });

    // These response types are answered in the fragment, as RFC 6749 §4.2.2.1 and OpenID Connect
    // prescribe for them; the query stays empty.
    for (const responseType of ['token', 'id_token']) {
      it(`redirects response_type=${responseType} with unsupported_response_type and the state in the fragment`, async () => {
        const callback = callbackOf(await getManual(valid({ response_type: responseType })));
        const fragment = new URLSearchParams(callback.hash.slice(1));
        const error = fragment.get('error');
        expect(RFC6749_AUTHORIZE_ERRORS).to.include(error);
        expect(error).to.equal('unsupported_response_type');
        expect(fragment.get('error_description')).to.be.a('string').and.not.equal('');
        expect(fragment.get('state')).to.equal('st-1');
        expect(callback.search).to.equal('');
      });
    }

    it('redirects an unknown response_type with unsupported_response_type and the state', async () => {
      const callback = callbackOf(await getManual(valid({ response_type: 'frobnicate' })));
      expect(callback.searchParams.get('error')).to.equal('unsupported_response_type');
      expect(callback.searchParams.get('state')).to.equal('st-1');
    });

    it('redirects a repeated state parameter with invalid_request', async () => {
      const url = `${valid({ state: undefined })}&state=a&state=b`;
      const callback = callbackOf(await getManual(url));
      expect(callback.searchParams.get('error')).to.equal('invalid_request');
      expect(callback.searchParams.has('code')).to.equal(false);
    });
  });

  describe('a valid request', () => {
    it('starts the sign-in interaction instead of erroring', async () => {
      const res = await getManual(valid());
      expect(res.status).to.be.oneOf([302, 303]);
      expect(res.headers.get('location')).to.match(/^\/interaction\//);
    });

    it('starts the sign-in without state when the request carries a PKCE challenge (Auth.js\'s default)', async () => {
      const res = await getManual(valid({ state: undefined, code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256' }));
      expect(res.status).to.be.oneOf([302, 303]);
      expect(res.headers.get('location')).to.match(/^\/interaction\//);
    });

    it('starts the sign-in without state when an OpenID Connect request carries a nonce (the ID token\'s nonce check binds the code instead)', async () => {
      const res = await getManual(valid({ state: undefined, scope: 'openid groups:read-only', nonce: 'n-0S6_WzA2Mj' }));
      expect(res.status).to.be.oneOf([302, 303]);
      expect(res.headers.get('location')).to.match(/^\/interaction\//);
    });
  });
});
