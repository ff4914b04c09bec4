import { expect } from 'chai';
import { createAccessToken, type NewAccessToken } from '../../src/services/access-tokens.js';
import type { RunningIdp } from '../helpers/app.js';
import { csrfFrom, formAction, UserAgent } from '../helpers/browser-less.js';
import { makeApp, makeGroup, makeUser } from '../helpers/factories.js';
import { exchangeCode, runAuthorization } from '../helpers/oauth.js';

export type User = Awaited<ReturnType<typeof makeUser>>;

export interface ApiResponse {
  status: number;
  headers: Headers;
  text: string;
  /** The parsed JSON body (undefined when the body is not JSON). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- each test reads the fields it expects
  body: any;
}

/** One request to the API over real HTTP; `token` goes in `Authorization: Bearer …` unless `authorization` says otherwise. */
export async function call(
  idp: RunningIdp,
  path: string,
  options: { token?: string; authorization?: string; method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<ApiResponse> {
  const headers = new Headers(options.headers);
  if (options.authorization !== undefined) headers.set('authorization', options.authorization);
  else if (options.token !== undefined) headers.set('authorization', `Bearer ${options.token}`);
  const res = await fetch(new URL(path, idp.url), { method: options.method ?? 'GET', headers, body: options.body });
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: res.status, headers: res.headers, text, body };
}

/** The API's error contract: status, `{error, error_description}` JSON, and an X-Request-Id. */
export function expectApiError(res: ApiResponse, status: number, error: string): void {
  expect(res.status, res.text).to.equal(status);
  expect(res.headers.get('content-type')).to.match(/^application\/json/);
  expect(res.body).to.be.an('object');
  expect(res.body.error).to.equal(error);
  expect(res.body.error_description).to.be.a('string').and.not.equal('');
  expect(Object.keys(res.body).sort()).to.deep.equal(['error', 'error_description']);
  expect(res.headers.get('x-request-id')).to.be.a('string').and.not.equal('');
}

/** A 401 for a token that was presented but is no good: RFC 6750 `error="invalid_token"`. */
export function expectInvalidToken(idp: RunningIdp, res: ApiResponse): void {
  expectApiError(res, 401, 'invalid_token');
  const challenge = res.headers.get('www-authenticate') ?? '';
  expect(challenge).to.match(new RegExp(`^Bearer realm="${escapeRegExp(idp.url)}", error="invalid_token"(, |$)`));
}

export function escapeRegExp(value: string): string {
  return value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** An OAuth application of a fresh group, owned by a fresh user. */
export async function makeClient(idp: RunningIdp) {
  const owner = await makeUser(idp.idp.db);
  const group = await makeGroup(idp.idp.db, owner.id);
  const redirectUri = 'http://127.0.0.1:9999/callback';
  const app = await makeApp(idp.idp.db, owner.id, group.id, { callbackURL: redirectUri });
  return { owner, group, clientId: app.clientId, clientSecret: app.clientSecret, redirectUri };
}

export type Client = Awaited<ReturnType<typeof makeClient>>;

/**
 * `ho_` and `hr_` tokens the real way: authorize → sign in → consent → code → token exchange.
 * Returns the agent too, signed in as `user`, for driving the pages afterwards.
 */
export async function oauthTokens(idp: RunningIdp, client: Client, user: User, scope = 'groups:read-only') {
  const agent = new UserAgent(idp.url);
  const callback = await runAuthorization(agent, {
    clientId: client.clientId,
    redirectUri: client.redirectUri,
    scope,
    login: { login: user.username, password: user.password },
  });
  const code = callback.searchParams.get('code');
  expect(code, callback.toString()).to.be.a('string');
  const { status, body } = await exchangeCode(idp.url, {
    client_id: client.clientId,
    client_secret: client.clientSecret,
    code: code!,
    redirect_uri: client.redirectUri,
  });
  expect(status, JSON.stringify(body)).to.equal(200);
  return { accessToken: String(body.access_token), refreshToken: String(body.refresh_token), scope: String(body.scope), agent };
}

/** An `ha_` token of `userId`, made by the service the pages and the CLI use. */
export async function personalToken(idp: RunningIdp, userId: number, input: Partial<NewAccessToken> = {}): Promise<string> {
  const { token } = await createAccessToken(idp.idp.db, userId, {
    name: 'test token',
    scopes: ['groups:read-only'],
    expiresInDays: 30,
    ...input,
  });
  return token;
}

/** Runs `fn` with Date.now moved `ms` ahead (the server runs in this process), then puts the clock back. */
export async function withClockAhead<T>(ms: number, fn: () => Promise<T>): Promise<T> {
  const realNow = Date.now;
  Date.now = () => realNow() + ms;
  try {
    return await fn();
  } finally {
    Date.now = realNow;
  }
}

/** The refresh grant at the token endpoint. */
export function refresh(idp: RunningIdp, client: Client, refreshToken: string) {
  return exchangeCode(idp.url, {
    grant_type: 'refresh_token',
    refresh_token: refreshToken,
    client_id: client.clientId,
    client_secret: client.clientSecret,
  });
}

/** A browser-less agent signed in as `user` through the sign-in form. */
export async function signIn(idp: RunningIdp, user: User): Promise<UserAgent> {
  const agent = new UserAgent(idp.url);
  const page = await agent.get('/login');
  expect(page.status).to.equal(200);
  const res = await agent.postForm('/login', { _csrf: csrfFrom(await page.text()), login: user.username, password: user.password });
  expect(res.status).to.equal(302);
  return agent;
}

/** Opens `page`, then presses the button of the form posting to an action containing `action`. */
export async function pressButton(agent: UserAgent, page: string, action: string): Promise<Response> {
  const res = await agent.get(page);
  expect(res.status, page).to.equal(200);
  const html = await res.text();
  return agent.postForm(formAction(html, action), { _csrf: csrfFrom(html) });
}
