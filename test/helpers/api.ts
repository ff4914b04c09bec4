import { expect } from 'chai';

/** An answer and its JSON body (undefined when it is not JSON). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each test reads the fields it expects
export type ApiResponse = { status: number; headers: Headers; text: string; body: any };

/** `token` goes in `Authorization: Bearer …` unless `authorization` is given; `form` is the body unless `body` is. */
export type CallOptions = { token?: string; authorization?: string; method?: string; headers?: Record<string, string>; body?: string; form?: Record<string, string> | string; query?: Record<string, string> | string };

/** One request over real HTTP to `server` (the API, the OAuth endpoints). */
export async function call(server: { url: string }, path: string, options: CallOptions = {}): Promise<ApiResponse> {
  const headers = new Headers(options.headers);
  if (options.authorization !== undefined) headers.set('authorization', options.authorization);
  else if (options.token !== undefined) headers.set('authorization', `Bearer ${options.token}`);
  let body = options.body;
  if (body === undefined && options.form !== undefined) {
    body = new URLSearchParams(options.form).toString();
    if (!headers.has('content-type')) headers.set('content-type', 'application/x-www-form-urlencoded');
  }
  const query = options.query === undefined ? '' : `?${new URLSearchParams(options.query)}`;
  const res = await fetch(new URL(`${path}${query}`, server.url), { method: options.method ?? 'GET', headers, body });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: /json/.test(res.headers.get('content-type') ?? '') && text ? JSON.parse(text) : undefined };
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

/**
 * The API's WWW-Authenticate challenge: the realm (the issuer), the API's protected resource
 * metadata (RFC 9728 §5.1), then `params` in order.
 */
export function apiChallenge(server: { url: string }, params: Record<string, string> = {}, scheme: 'Bearer' | 'DPoP' = 'Bearer'): string {
  const all = { resource_metadata: `${server.url}/.well-known/oauth-protected-resource/apis/v2`, ...params };
  return [`${scheme} realm="${server.url}"`, ...Object.entries(all).map(([k, v]) => `${k}="${v}"`)].join(', ');
}

/** A 401 for a token that was presented but is no good: RFC 6750 `error="invalid_token"`. */
export function expectInvalidToken(server: { url: string }, res: ApiResponse): void {
  expectApiError(res, 401, 'invalid_token');
  expect(res.headers.get('www-authenticate') ?? '').to.match(new RegExp(`^${escapeRegExp(apiChallenge(server, { error: 'invalid_token' }))}(, |$)`));
}

export function escapeRegExp(value: string): string {
  return value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
