import { expect } from 'chai';
import { call, type ApiResponse, type CallOptions } from './api.js';
import { Browser, type Page } from './browser.js';
import type { Client, TestUser } from './factories.js';
import { formAction } from './html.js';

/** What a client knows of its application, and who signs in. */
type ClientOf = Pick<Client, 'clientId' | 'clientSecret' | 'redirectUri'>;
type Person = Pick<TestUser, 'username' | 'password'>;

/** An authorization request of the client; `deny` clicks Cancel instead of Authorize. */
export type AuthorizeRequest = Pick<Client, 'clientId' | 'redirectUri'> & { scope?: string; state?: string; extra?: Record<string, string>; deny?: boolean };

export function authorizeUrl(base: string, o: AuthorizeRequest): string {
  const query = new URLSearchParams({ client_id: o.clientId, redirect_uri: o.redirectUri, state: o.state ?? 'state-123', ...(o.scope ? { scope: o.scope } : {}), ...o.extra });
  return `${base}/login/oauth/authorize?${query}`;
}

/**
 * Plays the person at the provider from `start` (an authorize URL, or a client's page that sends
 * the browser there): signs in when asked, then clicks Authorize (Cancel when `deny`), until the
 * browser leaves the provider. Returns the redirect into `callback` (not followed) or, without
 * one, the page the browser lands on.
 */
export async function passProvider(browser: Browser, start: string, person?: Person, o: { deny?: boolean; callback?: string; secondFactor?: () => Promise<string> } = {}): Promise<Page> {
  const provider = new URL(browser.base).origin;
  let page = await browser.follow(start, o.callback);
  for (let step = 0; step < 5; step += 1) {
    if (page.url.origin !== provider || page.headers.has('location')) return page;
    expect(page.status, `${page.url} at step ${step}: ${page.text.slice(0, 300)}`).to.equal(200);
    const signingIn = page.text.includes('name="password"');
    const secondStep = page.text.includes('data-testid="two-factor-form"');
    if (signingIn && !person) throw new Error('the flow asked for a password and no person was given');
    if (secondStep && !o.secondFactor) throw new Error('the flow asked for a second factor and no code was given');
    const fields: Record<string, string> = signingIn ? { login: person!.username, password: person!.password } : secondStep ? { code: await o.secondFactor!() } : {};
    const action = formAction(page.text, signingIn ? '/login' : secondStep ? '/two-factor' : o.deny ? '/abort' : '/confirm');
    page = await browser.follow(await browser.submit(action, fields), o.callback);
  }
  throw new Error(`still at the provider after five steps: ${page.url}`);
}

/** authorize → sign in (when asked, with `secondFactor`'s code when two-factor is on) → consent → the redirect to the callback, whose URL it returns. */
export async function authorize(browser: Browser, request: AuthorizeRequest, person?: Person, secondFactor?: () => Promise<string>): Promise<URL> {
  const page = await passProvider(browser, authorizeUrl(browser.base, request), person, { deny: request.deny, callback: request.redirectUri, secondFactor });
  return callbackOf(page, request.redirectUri);
}

/** The URL of a redirect into `callback`. */
export function callbackOf(page: Page, callback: string): URL {
  const location = page.headers.get('location') ?? '';
  expect(location.startsWith(callback), `${page.status} at ${page.url}, not a redirect to ${callback}: ${location}`).to.equal(true);
  return new URL(location);
}

/** `ho_` and `hr_` tokens the real way (authorize → sign in → consent → code → exchange), and the browser, signed in as `person`. */
export async function oauthTokens(base: string, client: ClientOf, person: Person, scope = 'groups:read-only') {
  const browser = new Browser(base);
  const callback = await authorize(browser, { ...client, scope }, person);
  const code = callback.searchParams.get('code');
  expect(code, callback.toString()).to.be.a('string');
  const res = await tokenRequest(base, { query: { client_id: client.clientId, client_secret: client.clientSecret, code: code!, redirect_uri: client.redirectUri } });
  expect(res.status, res.text).to.equal(200);
  return { accessToken: String(res.body.access_token), refreshToken: String(res.body.refresh_token), scope: String(res.body.scope), browser };
}

/** A POST to the token endpoint, the parameters in the query string, a form body, or both. */
export function tokenRequest(base: string, options: CallOptions): Promise<ApiResponse> {
  return call({ url: base }, '/login/oauth/access_token', { method: 'POST', ...options });
}

/** The refresh grant, its parameters in the query string. */
export function refresh(base: string, client: ClientOf, refreshToken: string): Promise<ApiResponse> {
  return tokenRequest(base, { query: { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: client.clientId, client_secret: client.clientSecret } });
}

export function basicAuth(clientId: string, secret: string): string {
  return `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(secret)}`).toString('base64')}`;
}

export async function discovery(base: string): Promise<Record<string, string>> {
  const res = await call({ url: base }, '/.well-known/openid-configuration');
  expect(res.status).to.equal(200);
  return res.body as Record<string, string>;
}

/** Runs `fn` with Date.now moved `ms` ahead (the server runs in this process and sees it too), then puts the clock back. */
export async function withClockAhead<T>(ms: number, fn: () => Promise<T>): Promise<T> {
  const realNow = Date.now;
  Date.now = () => realNow() + ms;
  try {
    return await fn();
  } finally {
    Date.now = realNow;
  }
}
