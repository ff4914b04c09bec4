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
  return { config, tokens, profile, url };
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
