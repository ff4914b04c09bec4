import { expect } from 'chai';
import type { UserAgent } from './browser-less.js';
import { csrfFrom, formAction } from './browser-less.js';

export interface FlowOptions {
  clientId: string;
  redirectUri: string;
  scope?: string;
  state?: string;
  extra?: Record<string, string>;
  login?: { login: string; password: string };
  /** Click Cancel instead of Authorize. */
  deny?: boolean;
}

export function authorizeUrl(base: string, o: FlowOptions): string {
  const q = new URLSearchParams({ client_id: o.clientId, redirect_uri: o.redirectUri, state: o.state ?? 'state-123', ...(o.scope ? { scope: o.scope } : {}), ...o.extra });
  return `${base}/login/oauth/authorize?${q}`;
}

/**
 * Drives authorize → sign-in page → consent page → redirect to the callback, as a person in a
 * browser would, and returns the callback URL the provider redirected to.
 */
export async function runAuthorization(agent: UserAgent, o: FlowOptions): Promise<URL> {
  return completeAuthorization(agent, authorizeUrl(agent.base, o), o);
}

/**
 * The same from an authorize URL a client built itself (Auth.js, mod_auth_openidc, oidc-agent…):
 * signs in and consents as needed and returns the URL the provider sent the browser back to.
 */
export async function completeAuthorization(
  agent: UserAgent,
  url: string,
  o: Pick<FlowOptions, 'redirectUri' | 'login' | 'deny'>,
): Promise<URL> {
  let res = await agent.follow(url);
  for (let step = 0; step < 4; step += 1) {
    const location = res.headers.get('location');
    if (location && location.startsWith(o.redirectUri)) return new URL(location);
    expect(res.status, `unexpected response at step ${step}: ${res.status} ${location ?? ''}`).to.equal(200);
    const html = await res.text();
    const csrf = csrfFrom(html);
    if (html.includes('name="password"')) {
      if (!o.login) throw new Error('the flow asked for a password and none was given');
      res = await agent.postForm(formAction(html, '/login'), { _csrf: csrf, ...o.login });
    } else {
      res = await agent.postForm(formAction(html, o.deny ? '/abort' : '/confirm'), { _csrf: csrf });
    }
    const next = res.headers.get('location');
    if (next && !next.startsWith(o.redirectUri)) res = await agent.follow(new URL(next, agent.base).toString());
  }
  throw new Error('the flow did not reach the callback');
}

export async function exchangeCode(base: string, params: Record<string, string>, init: RequestInit = {}): Promise<{ status: number; body: Record<string, unknown>; headers: Headers }> {
  const res = await fetch(`${base}/login/oauth/access_token?${new URLSearchParams(params)}`, { method: 'POST', ...init });
  const text = await res.text();
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(text);
  } catch {
    body = { raw: text };
  }
  return { status: res.status, body, headers: res.headers };
}
