import { createHash, randomBytes } from 'node:crypto';
import { expect } from 'chai';
import type { Knex } from 'knex';
import { startIdp, type Profile, type RunningIdp } from '../helpers/app.js';
import { csrfFrom, UserAgent } from '../helpers/browser-less.js';
import { makeApp, makeGroup, makeUser } from '../helpers/factories.js';
import { runAuthorization, type FlowOptions } from '../helpers/oauth.js';

/** What the OAuth suites share: a user, an application of a group they own, and small HTTP helpers. */

export const CALLBACK = 'http://127.0.0.1:9999/callback';
export const TOKEN_PATH = '/login/oauth/access_token';

export type TestUser = Awaited<ReturnType<typeof makeUser>>;

export interface Client {
  clientId: string;
  clientSecret: string;
  redirectUri: string;
}

export interface Fixture extends Client {
  user: TestUser;
  groupName: string;
}

export async function makeFixture(db: Knex, redirectUri = CALLBACK): Promise<Fixture> {
  const user = await makeUser(db);
  const group = await makeGroup(db, user.id);
  const app = await makeApp(db, user.id, group.id, { callbackURL: redirectUri });
  return { user, groupName: group.name, clientId: app.clientId, clientSecret: app.clientSecret, redirectUri };
}

/** Another application (of the same group owner) for cross-client checks. */
export async function makeOtherClient(db: Knex, owner: TestUser, redirectUri = CALLBACK): Promise<Client> {
  const group = await makeGroup(db, owner.id);
  const app = await makeApp(db, owner.id, group.id, { callbackURL: redirectUri, name: 'Other App' });
  return { clientId: app.clientId, clientSecret: app.clientSecret, redirectUri };
}

export function credentialsOf(user: TestUser): { login: string; password: string } {
  return { login: user.username, password: user.password };
}

/** Signs in (if asked), consents if asked, and returns the callback URL's parameters. */
export async function authorize(
  agent: UserAgent,
  client: Client,
  user: TestUser,
  options: Omit<FlowOptions, 'clientId' | 'redirectUri' | 'login'> = {},
): Promise<URLSearchParams> {
  const callback = await runAuthorization(agent, {
    clientId: client.clientId,
    redirectUri: client.redirectUri,
    login: credentialsOf(user),
    ...options,
  });
  return callback.searchParams;
}

/** GET without following redirects or sending cookies. */
export function getManual(url: string): Promise<Response> {
  return fetch(url, { redirect: 'manual' });
}

export interface TokenCall {
  query?: Record<string, string> | string;
  form?: Record<string, string> | string;
  headers?: Record<string, string>;
  /** A raw body, sent instead of `form`. */
  body?: string;
}

export interface TokenResult {
  status: number;
  body: Record<string, unknown>;
  text: string;
  headers: Headers;
}

async function readJson(res: Response): Promise<TokenResult> {
  const text = await res.text();
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    body = { raw: text };
  }
  return { status: res.status, body, text, headers: res.headers };
}

/** POST to the token endpoint with parameters in the query string, a form body, or both. */
export async function tokenRequest(base: string, call: TokenCall): Promise<TokenResult> {
  const query = call.query === undefined ? '' : `?${new URLSearchParams(call.query)}`;
  const headers: Record<string, string> = { ...call.headers };
  let body: string | undefined = call.body;
  if (body === undefined && call.form !== undefined) {
    body = new URLSearchParams(call.form).toString();
    headers['content-type'] ??= 'application/x-www-form-urlencoded';
  }
  const res = await fetch(`${base}${TOKEN_PATH}${query}`, { method: 'POST', headers, body });
  return readJson(res);
}

export function basicAuth(clientId: string, secret: string): string {
  return `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(secret)}`).toString('base64')}`;
}

export async function discovery(base: string): Promise<Record<string, string>> {
  const res = await fetch(`${base}/.well-known/openid-configuration`);
  expect(res.status).to.equal(200);
  return (await res.json()) as Record<string, string>;
}

/** RFC 7662 introspection, authenticating as `client` with HTTP Basic. */
export async function introspect(base: string, client: Client, token: string): Promise<TokenResult> {
  const { introspection_endpoint } = await discovery(base);
  const res = await fetch(introspection_endpoint!, {
    method: 'POST',
    headers: { authorization: basicAuth(client.clientId, client.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token }).toString(),
  });
  return readJson(res);
}

/** RFC 7009 revocation, authenticating as `client` with HTTP Basic. */
export async function revoke(base: string, client: Client, token: string): Promise<number> {
  const { revocation_endpoint } = await discovery(base);
  const res = await fetch(revocation_endpoint!, {
    method: 'POST',
    headers: { authorization: basicAuth(client.clientId, client.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token }).toString(),
  });
  await res.arrayBuffer();
  return res.status;
}

/** Signs in on the site itself (GET /login for the CSRF token, then POST /login). */
export async function signInOnSite(agent: UserAgent, user: TestUser): Promise<Response> {
  const page = await agent.get('/login');
  expect(page.status).to.equal(200);
  const csrf = csrfFrom(await page.text());
  return agent.postForm('/login', { _csrf: csrf, ...credentialsOf(user) });
}

export function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/**
 * A clock the test controls: Date.now (which oidc-provider's epochTime and the SQL adapter read)
 * is moved ahead by an offset until `restore`. The server runs in this process, so it sees it too.
 */
const realNow = Date.now;
export const clock = {
  /** From now on, Date.now is `seconds` ahead of the real time (an absolute offset, not cumulative). */
  advance(seconds: number): void {
    Date.now = () => realNow() + seconds * 1000;
  },
  restore(): void {
    Date.now = realNow;
  },
};

/** The RFC 6749 §4.1.2.1 error codes an authorization endpoint may redirect with. */
export const RFC6749_AUTHORIZE_ERRORS = [
  'invalid_request',
  'unauthorized_client',
  'access_denied',
  'unsupported_response_type',
  'invalid_scope',
  'server_error',
  'temporarily_unavailable',
];

/** A server on `profile`, its fixture, and a browser signed in on the site as the fixture's user. */
export async function signedInFixture(profile: Profile): Promise<{ server: RunningIdp; fx: Fixture; agent: UserAgent }> {
  const server = await startIdp(profile);
  const fx = await makeFixture(server.idp.db);
  const agent = new UserAgent(server.url);
  await signInOnSite(agent, fx.user);
  return { server, fx, agent };
}
