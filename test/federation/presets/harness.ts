import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as client from 'openid-client';
import type { SignInProviderRow } from '../../../src/db/sign-in-providers.js';
import { openProvider } from '../../../src/services/federation/providers.js';
import type { UpstreamKind, UpstreamProvider } from '../../../src/services/federation/upstream.js';

/** What the sign-in flow does with a kind, without the pages around it: used by each preset's tests. */

export const CALLBACK = 'http://127.0.0.1:9/login/callback/test';
export const TIMEOUT_MS = 5000;

let ids = 0;

/** A provider as stored (settings as JSON, the secret in clear since no KEYS_SECRET is set), opened as the flow opens it. */
export function providerOf(kind: UpstreamKind, settings: Record<string, string>, fields: Partial<SignInProviderRow> = {}): UpstreamProvider {
  ids += 1;
  const at = new Date(Date.now() + ids).toISOString();
  return openProvider({
    id: 10_000 + ids,
    slug: `test-${ids}`,
    kind: kind.kind,
    name: kind.label,
    client_id: 'our-client-id',
    client_secret: 'our-client-secret',
    scopes: kind.defaultScopes.join(' '),
    settings: JSON.stringify(settings),
    allow_sign_up: 1,
    allowed_domains: '',
    trust_mfa: 0,
    position: 0,
    disabled_at: null,
    created_at: at,
    updated_at: at,
    ...fields,
  }, undefined);
}

/**
 * Runs the authorization code flow as the sign-in flow does (PKCE, state, and a nonce when the kind
 * expects an ID token): builds the authorization URL, lets `authorize` play the person at the
 * upstream and return the callback URL it was sent to, then exchanges the code and reads the profile.
 */
export async function signIn(
  kind: UpstreamKind,
  provider: UpstreamProvider,
  authorize: (url: URL) => Promise<URL>,
  { alterCallback }: { alterCallback?: (callback: URL) => URL } = {},
) {
  const config = await kind.configure(provider, { timeoutMs: TIMEOUT_MS });
  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const nonce = kind.usesIdToken ? client.randomNonce() : undefined;
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: CALLBACK,
    scope: provider.scopes.join(' '),
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
    ...(nonce ? { nonce } : {}),
    ...kind.authorizationParameters?.(provider),
  });
  let callback = await authorize(url);
  if (alterCallback) callback = alterCallback(callback);
  const tokens = await client.authorizationCodeGrant(config, callback, {
    pkceCodeVerifier: verifier,
    expectedState: state,
    ...(nonce ? { expectedNonce: nonce } : {}),
    idTokenExpected: kind.usesIdToken,
  });
  const profile = await kind.profile(config, tokens, { timeoutMs: TIMEOUT_MS });
  return { config, tokens, profile, url, verifier, state };
}

export type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void | Promise<void>;

/** A plain HTTP server on a free loopback port. */
export async function listen(handler: Handler): Promise<{ server: Server; url: string; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => { body += chunk; });
    req.on('end', () => {
      Promise.resolve(handler(req, res, body)).catch((err: unknown) => {
        res.statusCode = 500;
        res.end(String(err));
      });
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    server,
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

export function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
  res.end(JSON.stringify(body));
}

export interface UpstreamAccount {
  /** Every claim the account has; released by scope as `claims` below says. */
  claims: Record<string, unknown>;
  /** The `amr` of its sign-in at the upstream. */
  amr?: string[];
}

/**
 * A real OpenID Connect provider (panva's oidc-provider, the engine Horizon ID itself runs on),
 * started on a loopback port, optionally under a path (`/<tenant>/v2.0` for Entra's layout). The
 * person's part (sign-in and consent) is played by the test: `signInAs` names the account the next
 * interaction finishes with, and `authorize(url)` follows the redirects with the upstream's cookies.
 */
export async function startOidcUpstream({
  mountPath = '',
  scopeClaims = {},
  idTokenCarriesClaims = true,
  extraRoutes,
  redirectUris = [CALLBACK],
  issInResponse = true,
}: {
  /** The client's registered callbacks. */
  redirectUris?: string[];
  /** false: the `iss` parameter is taken out of the redirects back to the client, as Entra ID sends none. */
  issInResponse?: boolean;
  mountPath?: string;
  scopeClaims?: Record<string, string[]>;
  /** false: the ID token carries only sub (and the openid scope's claims); the rest is for userinfo. */
  idTokenCarriesClaims?: boolean;
  /** Routes answered before the provider: (path, base URL) → a body, or undefined to pass. */
  extraRoutes?: (path: string, base: string, issuerDocument: () => Promise<Record<string, unknown>>) => Promise<Record<string, unknown> | undefined>;
} = {}) {
  const { default: Provider } = await import('oidc-provider');
  const { default: Koa } = await import('koa');
  const { default: mount } = await import('koa-mount');
  const accounts = new Map<string, UpstreamAccount>();
  let next = '';
  const app = new Koa();
  const http = await listen(() => undefined);
  http.server.removeAllListeners('request');
  const base = http.url;
  const issuer = `${base}${mountPath}`;
  const provider = new Provider(issuer, {
    clients: [{
      client_id: 'our-client-id',
      client_secret: 'our-client-secret',
      redirect_uris: redirectUris,
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_post',
    }],
    jwks: { keys: [await signingKey()] },
    claims: {
      email: ['email', 'email_verified'],
      profile: ['name', 'nickname', 'preferred_username'],
      ...scopeClaims,
      openid: ['sub', 'amr', ...(scopeClaims.openid ?? [])],
    },
    conformIdTokenClaims: !idTokenCarriesClaims,
    features: { devInteractions: { enabled: false } },
    interactions: { url: (_ctx, interaction) => `${mountPath}/interaction/${interaction.uid}` },
    async findAccount(_ctx, sub) {
      const account = accounts.get(sub);
      if (!account) return undefined;
      return { accountId: sub, claims: () => ({ sub, ...account.claims }) };
    },
  });
  provider.on('server_error', (_ctx, err) => { console.error('upstream server_error', err); });
  const issuerDocument = async () => (await (await fetch(`${issuer}/.well-known/openid-configuration`, { headers: { 'x-upstream-itself': '1' } })).json()) as Record<string, unknown>;
  app.use(async (ctx, nextMiddleware) => {
    await nextMiddleware();
    const location = ctx.response.get('location');
    if (issInResponse || !location || !redirectUris.some((uri) => location.startsWith(`${uri}?`))) return;
    const back = new URL(location);
    back.searchParams.delete('iss');
    ctx.redirect(back.href);
  });
  app.use(async (ctx, nextMiddleware) => {
    if (extraRoutes && !ctx.get('x-upstream-itself')) {
      const body = await extraRoutes(ctx.path, base, issuerDocument);
      if (body) {
        ctx.body = body;
        return;
      }
    }
    const interaction = new RegExp(`^${mountPath}/interaction/[^/]+$`).exec(ctx.path);
    if (!interaction) return nextMiddleware();
    const details = await provider.interactionDetails(ctx.req, ctx.res);
    const account = accounts.get(next);
    if (!account) throw new Error(`no upstream account ${next}`);
    const grant = new provider.Grant({ accountId: next, clientId: String(details.params.client_id) });
    grant.addOIDCScope(String(details.params.scope));
    const grantId = await grant.save();
    await provider.interactionFinished(ctx.req, ctx.res, {
      login: { accountId: next, ...(account.amr ? { amr: account.amr } : {}) },
      consent: { grantId },
    }, { mergeWithLastSubmission: false });
  });
  app.use(mountPath ? mount(mountPath, provider) : mount(provider));
  http.server.on('request', app.callback());

  /** Plays the person: follows the authorization URL through sign-in and consent to the callback. */
  async function authorize(url: URL): Promise<URL> {
    const jar = new Map<string, string>();
    let at = url.href;
    for (let hop = 0; hop < 10; hop += 1) {
      if (at.startsWith(CALLBACK)) return new URL(at);
      const res = await fetch(at, { redirect: 'manual', headers: { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') } });
      for (const cookie of res.headers.getSetCookie()) {
        const pair = cookie.split(';')[0] ?? '';
        const eq = pair.indexOf('=');
        jar.set(pair.slice(0, eq), pair.slice(eq + 1));
      }
      const location = res.headers.get('location');
      if (!location) throw new Error(`the upstream answered ${res.status} at ${at}: ${await res.text()}`);
      at = new URL(location, at).href;
    }
    throw new Error('too many redirects at the upstream');
  }

  return {
    base,
    issuer,
    accounts,
    signInAs(sub: string) { next = sub; },
    authorize,
    close: http.close,
  };
}

let key: Promise<Record<string, unknown>> | undefined;
/** One RSA key for every upstream of a run (making one is slow on a busy machine). */
function signingKey() {
  key ??= makeKey();
  return key;
}

async function makeKey() {
  const { exportJWK, generateKeyPair } = await import('jose');
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  return { ...(await exportJWK(privateKey)), kid: 'upstream', alg: 'RS256', use: 'sig' };
}
