import { csrfFrom, formAction } from '../test/helpers/html.js';
import { Browser, inParallel, send } from './http.js';

/**
 * The authorization code flow as a browser and a client server drive it, for the service
 * (sign-in page, consent page, the query-string token request) and for raw
 * oidc-provider (sign-in and consent finish by themselves; a form-body token request).
 */

export interface OAuthClient {
  base: string;
  clientId: string;
  clientSecret: string;
  redirectUri: string;
}

export type PageStep = (html: string) => { path: string; fields: Record<string, string> };

/** Follows the flow from the authorize URL to the callback, answering pages with `onPage`; returns the code. */
export async function authorizeToCode(browser: Browser, start: string, redirectUri: string, onPage?: PageStep): Promise<string> {
  let reply = await browser.get(start);
  for (let step = 0; step < 12; step += 1) {
    if (reply.status >= 300 && reply.status < 400 && reply.location) {
      if (reply.location.startsWith(redirectUri)) {
        const params = new URL(reply.location).searchParams;
        const code = params.get('code');
        if (!code) throw new Error(`the flow ended without a code: ${params.get('error')} ${params.get('error_description')}`);
        return code;
      }
      reply = await browser.get(reply.location);
    } else if (reply.status === 200 && onPage) {
      const { path, fields } = onPage(reply.body);
      reply = await browser.postForm(path, fields);
      // A full hashing queue sheds a sign-in with 503 and Retry-After: the person waits and
      // presses the button again, and the flow counts once, however long it took.
      for (let retry = 0; reply.status === 503 && reply.retryAfter !== undefined && retry < 20; retry += 1) {
        await new Promise((resolve) => setTimeout(resolve, reply.retryAfter! * 1000));
        reply = await browser.postForm(path, fields);
      }
    } else {
      throw new Error(`unexpected ${reply.status} at step ${step} of the flow: ${reply.body.slice(0, 200)}`);
    }
  }
  throw new Error('the flow did not reach the callback');
}

// ---- the service -------------------------------------------------------------------------

export function ourAuthorizePath(client: OAuthClient): string {
  // A bare request, as a hand-written client sends it: no scope, no response_type.
  return `/login/oauth/authorize?${new URLSearchParams({ client_id: client.clientId, redirect_uri: client.redirectUri, state: 'bench-state' })}`;
}

/** The query-string exchange: every parameter in the query string, an empty body. */
export function ourExchangePath(client: OAuthClient, code: string): string {
  return `/login/oauth/access_token?${new URLSearchParams({ client_id: client.clientId, client_secret: client.clientSecret, code, redirect_uri: client.redirectUri })}`;
}

export function signInAndConsent(login: { login: string; password: string }): PageStep {
  return (html) => {
    const _csrf = csrfFrom(html);
    if (html.includes('name="password"')) return { path: formAction(html, '/login'), fields: { _csrf, ...login } };
    return { path: formAction(html, '/confirm'), fields: { _csrf } };
  };
}

export async function ourExchange(client: OAuthClient, code: string): Promise<string> {
  return (await ourExchangeTokens(client, code)).access;
}

/** The exchange, keeping the refresh token too. */
export async function ourExchangeTokens(client: OAuthClient, code: string): Promise<{ access: string; refresh: string }> {
  const reply = await send(new URL(ourExchangePath(client, code), client.base), { method: 'POST' });
  const body = reply.status === 200 ? (JSON.parse(reply.body) as { access_token?: string; refresh_token?: string }) : {};
  if (!body.access_token?.startsWith('ho_') || !body.refresh_token) throw new Error(`the exchange failed: ${reply.status} ${reply.body.slice(0, 200)}`);
  return { access: body.access_token, refresh: body.refresh_token };
}

/** The refresh-token grant, its parameters in the query string as the exchange sends them. */
export function ourRefreshPath(client: OAuthClient, refreshToken: string): string {
  return `/login/oauth/access_token?${new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken, client_id: client.clientId, client_secret: client.clientSecret })}`;
}

/** One refresh; returns the next refresh token (the service rotates them: the old one is spent). */
export async function ourRefresh(client: OAuthClient, refreshToken: string): Promise<string> {
  const reply = await send(new URL(ourRefreshPath(client, refreshToken), client.base), { method: 'POST' });
  const body = reply.status === 200 ? (JSON.parse(reply.body) as { access_token?: string; refresh_token?: string }) : {};
  if (!body.access_token?.startsWith('ho_') || !body.refresh_token || body.refresh_token === refreshToken) {
    throw new Error(`the refresh failed: ${reply.status} ${reply.body.slice(0, 200)}`);
  }
  return body.refresh_token;
}

/**
 * One password sign-in through the real form, in a fresh browser: the authorize request leads
 * to the sign-in page, its form is posted, and the service answers with a redirect onwards (to
 * consent, which is not followed). A sign-in the full hashing queue sheds is submitted again
 * after its Retry-After, as in the whole flow.
 */
export async function ourSignIn(client: OAuthClient, login: { login: string; password: string }): Promise<void> {
  const browser = new Browser(client.base);
  let reply = await browser.get(ourAuthorizePath(client));
  for (let hops = 0; reply.status >= 300 && reply.status < 400 && reply.location && hops < 6; hops += 1) reply = await browser.get(reply.location);
  if (reply.status !== 200 || !reply.body.includes('name="password"')) throw new Error(`no sign-in page: ${reply.status} ${reply.body.slice(0, 200)}`);
  const path = formAction(reply.body, '/login');
  const fields = { _csrf: csrfFrom(reply.body), ...login };
  reply = await browser.postForm(path, fields);
  for (let retry = 0; reply.status === 503 && reply.retryAfter !== undefined && retry < 20; retry += 1) {
    await new Promise((resolve) => setTimeout(resolve, reply.retryAfter! * 1000));
    reply = await browser.postForm(path, fields);
  }
  if (reply.status < 300 || reply.status >= 400) throw new Error(`the sign-in failed: ${reply.status} ${reply.body.slice(0, 200)}`);
}

/** A whole flow of a person who has never used the application, in a fresh browser: authorize → sign-in → consent → exchange. */
export async function ourWholeFlow(client: OAuthClient, login: { login: string; password: string }): Promise<string> {
  const browser = new Browser(client.base);
  const code = await authorizeToCode(browser, ourAuthorizePath(client), client.redirectUri, signInAndConsent(login));
  return ourExchange(client, code);
}

export interface CodeMinter {
  /** The code of the sign-in flow itself. */
  first: string;
  mint(count: number): Promise<string[]>;
}

/**
 * Codes for the exchange scenarios, minted through the real flow: one browser signs in and
 * consents once; after that, with a session and a grant, each authorize request answers with a
 * code at once.
 */
export async function ourCodeMinter(client: OAuthClient, login: { login: string; password: string }): Promise<CodeMinter> {
  const browser = new Browser(client.base);
  const first = await authorizeToCode(browser, ourAuthorizePath(client), client.redirectUri, signInAndConsent(login));
  return {
    first,
    async mint(count) {
      const codes: string[] = [];
      await inParallel(count, 16, async () => {
        codes.push(await authorizeToCode(browser, ourAuthorizePath(client), client.redirectUri));
      });
      return codes;
    },
  };
}

// ---- raw oidc-provider ---------------------------------------------------------------------

export function rawAuthorizePath(client: OAuthClient): string {
  // offline_access with prompt=consent so that, like the service, the exchange returns an access
  // token and a refresh token (and no ID token, which would add an RS256 signature).
  return `/auth?${new URLSearchParams({
    client_id: client.clientId,
    redirect_uri: client.redirectUri,
    response_type: 'code',
    scope: 'offline_access',
    prompt: 'consent',
    state: 'bench-state',
  })}`;
}

export function rawExchangeBody(client: OAuthClient, code: string): string {
  return new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: client.redirectUri }).toString();
}

export function rawExchangeHeaders(client: OAuthClient): Record<string, string> {
  return {
    authorization: `Basic ${Buffer.from(`${encodeURIComponent(client.clientId)}:${encodeURIComponent(client.clientSecret)}`).toString('base64')}`,
    'content-type': 'application/x-www-form-urlencoded',
  };
}

async function rawExchange(client: OAuthClient, code: string): Promise<void> {
  const reply = await send(new URL('/token', client.base), { method: 'POST', headers: rawExchangeHeaders(client), body: rawExchangeBody(client, code) });
  if (reply.status !== 200 || !(JSON.parse(reply.body) as { refresh_token?: string }).refresh_token) {
    throw new Error(`the raw exchange failed: ${reply.status} ${reply.body.slice(0, 200)}`);
  }
}

export async function rawWholeFlow(client: OAuthClient): Promise<void> {
  const browser = new Browser(client.base);
  const code = await authorizeToCode(browser, rawAuthorizePath(client), client.redirectUri);
  await rawExchange(client, code);
}

/**
 * The same for raw oidc-provider. Every request asks for consent again (offline_access), which
 * finishes by itself but is an interaction, bound to its browser's cookie: so each of the 16
 * parallel lanes has a browser of its own.
 */
export async function rawCodeMinter(client: OAuthClient): Promise<CodeMinter> {
  const lanes = Array.from({ length: 16 }, () => new Browser(client.base));
  const firsts = await Promise.all(lanes.map((browser) => authorizeToCode(browser, rawAuthorizePath(client), client.redirectUri)));
  return {
    first: firsts[0]!,
    async mint(count) {
      const codes: string[] = [];
      let next = 0;
      await Promise.all(
        lanes.map(async (browser) => {
          while (next < count) {
            next += 1;
            codes.push(await authorizeToCode(browser, rawAuthorizePath(client), client.redirectUri));
          }
        }),
      );
      return codes;
    },
  };
}
