import * as client from 'openid-client';
import type { UpstreamKind, UpstreamProfile, UpstreamProvider } from '../upstream.js';
import { UpstreamAnswerError, cachedConfiguration, urlSetting, prepare, timedFetch } from '../discovery.js';

/**
 * GitHub.com and GitHub Enterprise Server: OAuth 2 (no OpenID Connect, so no ID token), with the
 * person read from the REST API's /user and /user/emails. On github.com the web endpoints are at
 * https://github.com/login/oauth/… and the API at https://api.github.com; on Enterprise Server both
 * are on its own host, the API under /api/v3.
 */

const GITHUB_COM = 'https://github.com';
const API_HEADERS = { accept: 'application/vnd.github+json', 'x-github-api-version': '2022-11-28' };

export function githubEndpoints(settings: Record<string, string>): { base: string; api: string; authorize: string; token: string } {
  const base = settings.base_url || GITHUB_COM;
  const api = settings.api_url || (new URL(base).hostname === 'github.com' ? 'https://api.github.com' : `${base}/api/v3`);
  return { base, api, authorize: `${base}/login/oauth/authorize`, token: `${base}/login/oauth/access_token` };
}

/**
 * GitHub answers a failed code exchange (a used or expired code, a wrong secret) with HTTP 200 and
 * an `error` member. As a 200 openid-client would only report a missing access_token; turned into
 * the 400 the OAuth specification prescribes, it reports GitHub's own error code and description.
 */
function githubTokenErrors(fetcher: client.CustomFetch, tokenEndpoint: string): client.CustomFetch {
  return async (url, options) => {
    const response = await fetcher(url, options);
    if (url !== tokenEndpoint || response.status !== 200) return response;
    const text = await response.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    const failed = !!body && typeof body === 'object' && typeof (body as { error?: unknown }).error === 'string';
    return new Response(text, { status: failed ? 400 : 200, headers: response.headers });
  };
}

async function configure(provider: UpstreamProvider, { timeoutMs, allowHttp }: { timeoutMs: number; allowHttp?: boolean }): Promise<client.Configuration> {
  return cachedConfiguration(provider, async () => {
    const endpoints = githubEndpoints(provider.settings);
    // No authorization_response_iss_parameter_supported in this metadata: GitHub sends no `iss`
    // with the code, and openid-client requires one only when the metadata says it is sent.
    const config = new client.Configuration(
      { issuer: endpoints.base, authorization_endpoint: endpoints.authorize, token_endpoint: endpoints.token },
      provider.clientId,
      undefined,
      client.ClientSecretPost(provider.clientSecret),
    );
    return prepare(config, new URL(endpoints.base), timeoutMs, githubTokenErrors(timedFetch(timeoutMs), endpoints.token), allowHttp);
  });
}

async function getJson(config: client.Configuration, accessToken: string, url: string): Promise<{ status: number; body: unknown }> {
  const response = await client.fetchProtectedResource(config, accessToken, new URL(url), 'GET', undefined, new Headers(API_HEADERS));
  const text = await response.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    if (response.ok) throw new UpstreamAnswerError(`GitHub answered ${new URL(url).pathname} with something other than JSON`);
  }
  return { status: response.status, body };
}

interface GitHubEmail { email?: unknown; primary?: unknown; verified?: unknown }

/** The address that counts as verified: the primary one, and only when GitHub has verified it. */
export function verifiedPrimary(emails: unknown): string {
  if (!Array.isArray(emails)) return '';
  const primary = (emails as GitHubEmail[]).find((e) => e && e.primary === true && e.verified === true && typeof e.email === 'string');
  return primary ? (primary.email as string).toLowerCase() : '';
}

async function profile(config: client.Configuration, tokens: client.TokenEndpointResponse): Promise<UpstreamProfile> {
  const api = githubApiOf(config);
  const user = await getJson(config, tokens.access_token, `${api}/user`);
  if (user.status !== 200) throw new UpstreamAnswerError(`GitHub answered /user with HTTP ${user.status}`);
  const body = (user.body ?? {}) as { id?: unknown; login?: unknown; name?: unknown; email?: unknown };
  if (typeof body.id !== 'number' || !Number.isSafeInteger(body.id) || body.id <= 0) throw new UpstreamAnswerError('GitHub\'s /user has no numeric id');
  // /user/emails needs the user:email scope; without it (403/404) only the public address is known, unverified.
  const emails = await getJson(config, tokens.access_token, `${api}/user/emails`);
  if (emails.status !== 200 && emails.status !== 403 && emails.status !== 404) throw new UpstreamAnswerError(`GitHub answered /user/emails with HTTP ${emails.status}`);
  const verified = emails.status === 200 ? verifiedPrimary(emails.body) : '';
  const publicEmail = typeof body.email === 'string' ? body.email.toLowerCase() : '';
  return {
    // The numeric id: a login can be renamed and then taken by someone else, the id never is.
    subject: String(body.id),
    username: typeof body.login === 'string' ? body.login : '',
    name: typeof body.name === 'string' ? body.name : '',
    email: verified || publicEmail,
    emailVerified: !!verified,
    amr: [],
  };
}

/** The API base a configuration was built for (kept with it so profile() needs only the configuration). */
const apiByConfig = new WeakMap<client.Configuration, string>();
function githubApiOf(config: client.Configuration): string {
  const api = apiByConfig.get(config);
  if (api) return api;
  // A configuration built elsewhere: derive it from the issuer as configure() does.
  return githubEndpoints({ base_url: config.serverMetadata().issuer }).api;
}

export const github: UpstreamKind = {
  kind: 'github',
  signIn: 'redirect',
  label: 'GitHub',
  settings: [
    urlSetting('base_url', 'Base URL', 'Leave empty for github.com. For GitHub Enterprise Server, its address, such as https://github.example.com.'),
    urlSetting('api_url', 'API URL', 'Leave empty: https://api.github.com for github.com, <base URL>/api/v3 for Enterprise Server. Set only to reach the API through a proxy.'),
  ],
  defaultScopes: ['read:user', 'user:email'],
  usesIdToken: false,
  async configure(provider, options) {
    const config = await configure(provider, options);
    apiByConfig.set(config, githubEndpoints(provider.settings).api);
    return config;
  },
  profile: (config, tokens) => profile(config, tokens),
};
