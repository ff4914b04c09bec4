import { request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import Provider from 'oidc-provider';
import type { Knex } from 'knex';
import { insertSignInProvider } from '../../src/db/sign-in-providers.js';
import { sealClientSecret } from '../../src/services/federation/providers.js';
import { now } from '../../src/time.js';
import { listen } from '../helpers/app.js';

/**
 * A real upstream OpenID Connect provider for the sign-in tests: an `oidc-provider` instance
 * (in-memory storage), reached only through a small HTTP proxy whose address is its issuer. The
 * provider's sign-in step signs in whoever the test says (`person`, with the `amr` it says), or
 * answers access_denied, with no page of its own. The proxy passes everything through unchanged,
 * unless the test makes the upstream misbehave (`tamper`):
 * - `nonce`: the authorization request's nonce is replaced, so the ID token carries another;
 * - `audience`: the code is asked for, and redeemed, as another client of the same provider, so
 *   the ID token is for another audience;
 * - `iss`: the `iss` of the authorization response (RFC 9207) names another issuer;
 * - `hang-token`: the token endpoint accepts the request and never answers.
 */
export interface UpstreamPerson {
  sub: string;
  email?: string;
  email_verified?: boolean;
  name?: string;
  preferred_username?: string;
}

export const UPSTREAM_CLIENT = { id: 'horizon-rp', secret: 'upstream-secret-of-horizon-rp-0123456789' };
const OTHER_CLIENT = { id: 'another-rp', secret: 'upstream-secret-of-another-rp-0123456789' };

export async function startUpstreamProvider(callbacks: () => string[]) {
  const front = await listen();
  const back = await listen();
  const state = {
    person: { sub: 'upstream-1' } as UpstreamPerson,
    amr: ['pwd'] as string[],
    deny: false,
    tamper: undefined as undefined | 'nonce' | 'audience' | 'iss' | 'hang-token',
    /** Authorization requests seen (after tampering), for the tests' checks. */
    seen: [] as URL[],
  };
  const people = new Map<string, UpstreamPerson>();

  let provider: Provider | undefined;
  const makeProvider = () =>
    new Provider(front.url, {
      clients: [UPSTREAM_CLIENT, OTHER_CLIENT].map((c) => ({
        client_id: c.id,
        client_secret: c.secret,
        redirect_uris: callbacks(),
        response_types: ['code'],
        grant_types: ['authorization_code'],
      })),
      findAccount: (_ctx, sub) => {
        const person = people.get(sub);
        return person ? { accountId: sub, claims: () => ({ ...person }) } : undefined;
      },
      claims: { openid: ['sub', 'amr'], email: ['email', 'email_verified'], profile: ['name', 'preferred_username'] },
      features: { devInteractions: { enabled: false } },
      interactions: { url: (_ctx, interaction) => `/i/${interaction.uid}` },
      pkce: { required: () => true },
      cookies: { keys: ['upstream-test-cookie-key'] },
    });

  async function interaction(req: IncomingMessage, res: ServerResponse) {
    const details = await provider!.interactionDetails(req, res);
    if (state.deny) {
      await provider!.interactionFinished(req, res, { error: 'access_denied', error_description: 'the person declined' }, { mergeWithLastSubmission: false });
      return;
    }
    if (details.prompt.name === 'login') {
      people.set(state.person.sub, { ...state.person });
      await provider!.interactionFinished(req, res, { login: { accountId: state.person.sub, amr: state.amr } }, { mergeWithLastSubmission: false });
      return;
    }
    const grant = new provider!.Grant({ accountId: details.session!.accountId, clientId: String(details.params.client_id) });
    grant.addOIDCScope(String(details.params.scope));
    const grantId = await grant.save();
    await provider!.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
  }

  back.server.on('request', (req, res) => {
    provider ??= makeProvider();
    if (req.url?.startsWith('/i/')) {
      interaction(req, res).catch((err: unknown) => {
        res.statusCode = 500;
        res.end(String(err));
      });
      return;
    }
    provider.callback()(req, res);
  });

  // The proxy: what the relying party talks to, and where the test makes the upstream misbehave.
  front.server.on('request', (req, res) => {
    const url = new URL(req.url ?? '/', front.url);
    const headers = { ...req.headers };
    if (url.pathname === '/auth' && url.searchParams.has('client_id')) {
      if (state.tamper === 'nonce') url.searchParams.set('nonce', 'a-nonce-the-relying-party-never-sent');
      if (state.tamper === 'audience') url.searchParams.set('client_id', OTHER_CLIENT.id);
      state.seen.push(new URL(url));
    }
    if (url.pathname === '/token' && state.tamper === 'hang-token') return;
    if (url.pathname === '/token' && state.tamper === 'audience') {
      headers.authorization = `Basic ${Buffer.from(`${OTHER_CLIENT.id}:${OTHER_CLIENT.secret}`).toString('base64')}`;
    }
    const forward = httpRequest(new URL(`${url.pathname}${url.search}`, back.url), { method: req.method, headers }, (answer) => {
      const out = { ...answer.headers };
      if (state.tamper === 'iss' && typeof out.location === 'string' && out.location.includes('/login/callback/')) {
        const location = new URL(out.location);
        location.searchParams.set('iss', 'https://impostor.example.test');
        out.location = location.href;
      }
      res.writeHead(answer.statusCode ?? 502, out);
      answer.pipe(res);
    });
    forward.on('error', () => {
      res.statusCode = 502;
      res.end();
    });
    req.pipe(forward);
  });

  return {
    url: front.url,
    state,
    reset() {
      state.person = { sub: 'upstream-1' };
      state.amr = ['pwd'];
      state.deny = false;
      state.tamper = undefined;
      state.seen = [];
    },
    async stop() {
      await front.close();
      await back.close();
    },
  };
}

/** A server that accepts connections and never answers: an upstream that hangs. */
export async function startSilentServer() {
  const held: ServerResponse[] = [];
  const silent = await listen((_req, res) => {
    held.push(res);
  });
  return { url: silent.url, stop: () => silent.close() };
}

/**
 * For a suite: a real upstream provider started before it and stopped after it, added to the
 * suite's server as the sign-in provider `upstream` ("Upstream"; sign-up allowed, no domain
 * limit, its second factor not trusted). `upstream()` is the running provider.
 */
export function useUpstreamSignInProvider(idp: { url: string; db: Knex }) {
  let upstream: Awaited<ReturnType<typeof startUpstreamProvider>> | undefined;
  before(async () => {
    upstream = await startUpstreamProvider(() => [`${idp.url}/login/callback/upstream`]);
    await insertSignInProvider(idp.db, {
      slug: 'upstream',
      kind: 'oidc',
      name: 'Upstream',
      client_id: UPSTREAM_CLIENT.id,
      client_secret: sealClientSecret(undefined, UPSTREAM_CLIENT.secret),
      scopes: '',
      settings: JSON.stringify({ issuer: upstream.url }),
      allow_sign_up: true,
      allowed_domains: '',
      trust_mfa: false,
      position: 0,
    }, now());
  });
  after(async () => {
    await upstream?.stop();
  });
  return () => upstream!;
}
