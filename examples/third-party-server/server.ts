/**
 * An example third-party server that signs its users in with Horizon ID and shows them their
 * groups. It is written the way a developer outside this project would write it: Koa and
 * openid-client v6, and nothing imported from the identity provider.
 *
 * It follows the usual client rule: a request with no token, or with a token the API does
 * not accept (unknown, invalid, expired or revoked), gets a 302 to the authorize endpoint with a
 * fresh, non-guessable `state`, which the callback checks when the user comes back.
 *
 *   IDP_ISSUER=http://localhost:3000 CLIENT_ID=… CLIENT_SECRET=hs_… npx tsx examples/third-party-server/server.ts
 */
import { randomBytes } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import Router from '@koa/router';
import Koa, { type Context, type Next } from 'koa';
import * as oauth from 'openid-client';

export interface ExampleOptions {
  /** The identity provider's base URL, which is also its OpenID issuer: http://localhost:3000. */
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** This server's callback, exactly the application's registered Authorization callback URL. */
  redirectUri: string;
  /** What to ask for; the default is enough to list the user's groups. */
  scope?: string;
  /** Where sessions live (by session id). A real server would use Redis or its database, with an expiry. */
  sessions?: Map<string, ExampleSession>;
}

/** What the server remembers about a browser. Only the session id goes to the browser, in a cookie. */
export interface ExampleSession {
  /** A sign-in under way: the `state` sent to authorize and the PKCE verifier for the code exchange. */
  pending?: { state: string; codeVerifier: string; returnTo: string };
  /** The user's access token, kept here and never sent to the browser. */
  accessToken?: string;
}

export const SESSION_COOKIE = 'example_session';

interface Group {
  id: number;
  name: string;
  path: string;
  description: string;
  visibilityLevel: string;
  role: string;
}

/** The API answered 401: the token is unknown, invalid, expired or revoked. */
class TokenRejected extends Error {}

export async function createExampleApp(options: ExampleOptions): Promise<Koa> {
  const { clientId, clientSecret, redirectUri, scope = 'groups:read-only' } = options;
  const sessions = options.sessions ?? new Map<string, ExampleSession>();
  const issuer = new URL(options.issuer);
  const api = `${issuer.href.replace(/\/$/, '')}/apis/v2`;

  // openid-client refuses plain http. A local identity provider (http://localhost:3000) is allowed
  // explicitly, and only then: with an https issuer every request stays on https.
  const config = await oauth.discovery(issuer, clientId, clientSecret, undefined, {
    execute: issuer.protocol === 'http:' ? [oauth.allowInsecureRequests] : [],
  });

  function newSession(ctx: Context, session: ExampleSession): ExampleSession {
    const id = randomBytes(32).toString('base64url');
    sessions.set(id, session);
    ctx.cookies.set(SESSION_COOKIE, id, { httpOnly: true, sameSite: 'lax', secure: ctx.secure, overwrite: true });
    return session;
  }

  function currentSession(ctx: Context): { id: string; session: ExampleSession } | undefined {
    const id = ctx.cookies.get(SESSION_COOKIE);
    const session = id ? sessions.get(id) : undefined;
    return id && session ? { id, session } : undefined;
  }

  /** Not signed in here: a 302 to the authorize endpoint, with a fresh state and PKCE challenge. */
  async function sendToAuthorize(ctx: Context): Promise<void> {
    const session = currentSession(ctx)?.session ?? newSession(ctx, {});
    const state = oauth.randomState();
    const codeVerifier = oauth.randomPKCECodeVerifier();
    session.pending = { state, codeVerifier, returnTo: ctx.path };
    const url = oauth.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope,
      state,
      code_challenge: await oauth.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
    });
    ctx.redirect(url.href); // 302
  }

  async function callApi<T>(token: string, path: string): Promise<T> {
    const res = await fetch(`${api}${path}`, { headers: { authorization: `Bearer ${token}`, accept: 'application/json' } });
    if (res.status === 401) throw new TokenRejected();
    if (!res.ok) throw new Error(`GET ${path} answered ${res.status}`);
    return (await res.json()) as T;
  }

  async function listGroups(token: string): Promise<Group[]> {
    const groups: Group[] = [];
    for (let pageNumber = 1; ; pageNumber += 1) {
      const page = await callApi<{ data: { total: number; items: Group[] } }>(token, `/groups?pageSize=50&pageNumber=${pageNumber}`);
      groups.push(...page.data.items);
      if (groups.length >= page.data.total || page.data.items.length === 0) return groups;
    }
  }

  /** Pages that need the user's token: no token, or one the API rejects, means authorize again. */
  async function requireToken(ctx: Context, next: Next): Promise<void> {
    const session = currentSession(ctx)?.session;
    if (!session?.accessToken) return sendToAuthorize(ctx);
    ctx.state.accessToken = session.accessToken;
    try {
      await next();
    } catch (err) {
      if (!(err instanceof TokenRejected)) throw err;
      delete session.accessToken;
      await sendToAuthorize(ctx);
    }
  }

  const router = new Router();

  router.get('/', requireToken, async (ctx) => {
    const token = ctx.state.accessToken as string;
    const user = await callApi<{ data: { username: string; name: string } }>(token, '/user');
    const groups = await listGroups(token);
    ctx.body = page(
      'Your groups',
      html`<p class="who">Signed in with Horizon ID as <strong>${user.data.name || user.data.username}</strong> (${user.data.username}).</p>
        <h1>Your groups</h1>
        ${groups.length
          ? html`<table>
              <thead><tr><th>Name</th><th>Path</th><th>Your role</th><th>Visibility</th><th>Description</th></tr></thead>
              <tbody>${groups.map(
                (g) => html`<tr data-testid="group"><td>${g.name}</td><td><code>${g.path}</code></td><td>${g.role}</td><td>${g.visibilityLevel}</td><td>${g.description}</td></tr>`,
              )}</tbody>
            </table>`
          : html`<p>You are not a member of any group yet.</p>`}
        <p class="note">Read from <code>GET /apis/v2/groups</code> with the token this server keeps for you. Revoke this
          application in Horizon ID (Account settings → Authorized applications) and reload: you are sent to authorize again.</p>
        <form method="post" action="/logout"><button type="submit">Forget my token</button></form>`,
    );
  });

  router.get(new URL(redirectUri).pathname, async (ctx) => {
    const current = currentSession(ctx);
    const pending = current?.session.pending;
    // The state must be the one this browser was sent with; anything else is refused (CSRF).
    if (!current || !pending || typeof ctx.query.state !== 'string' || ctx.query.state !== pending.state) {
      ctx.status = 400;
      ctx.body = page('Sign-in failed', html`<h1>Sign-in failed</h1><p>This answer does not belong to a sign-in started here (the <code>state</code> does not match).</p><p><a href="/">Start again</a></p>`);
      return;
    }
    delete current.session.pending;
    const error = ctx.query.error;
    if (typeof error === 'string') {
      // access_denied: the person clicked Cancel on the consent page.
      const denied = error === 'access_denied';
      const title = denied ? 'Access denied' : 'Sign-in failed';
      const description = typeof ctx.query.error_description === 'string' ? html`: ${ctx.query.error_description}` : '';
      ctx.status = denied ? 403 : 400;
      ctx.body = page(title, html`<h1>${title}</h1>
        <p>Horizon ID answered <code data-testid="error">${error}</code>${description}.</p>
        <p>${denied ? 'You did not authorize this application, so it cannot show your groups.' : ''} <a href="${pending.returnTo}">Try again</a></p>`);
      return;
    }
    const callbackUrl = new URL(redirectUri);
    callbackUrl.search = ctx.querystring;
    const tokens = await oauth.authorizationCodeGrant(config, callbackUrl, {
      pkceCodeVerifier: pending.codeVerifier,
      expectedState: pending.state,
    });
    // A new session id once signed in, so an id planted before sign-in is worth nothing after it.
    sessions.delete(current.id);
    newSession(ctx, { accessToken: tokens.access_token });
    ctx.redirect(pending.returnTo);
  });

  router.post('/logout', (ctx) => {
    const current = currentSession(ctx);
    if (current) sessions.delete(current.id);
    ctx.cookies.set(SESSION_COOKIE, null);
    ctx.body = page('Signed out', html`<h1>Signed out</h1><p>This server no longer holds a token for you. <a href="/">Sign in again</a></p>`);
  });

  const app = new Koa();
  app.use(async function errorPage(ctx, next) {
    try {
      await next();
    } catch (err) {
      console.error('example server:', err);
      ctx.status = 502;
      const detail = err instanceof oauth.ResponseBodyError ? `${err.error}: ${err.error_description ?? ''}` : 'see the server log';
      ctx.body = page('Something went wrong', html`<h1>Something went wrong</h1><p>Talking to Horizon ID failed (${detail}).</p><p><a href="/">Try again</a></p>`);
    }
  });
  app.use(router.routes());
  app.use(router.allowedMethods());
  return app;
}

/** HTML that is already safe; everything else interpolated into html`…` is escaped. */
class SafeHtml {
  constructor(readonly value: string) {}
}

function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function toHtml(value: unknown): string {
  if (value instanceof SafeHtml) return value.value;
  if (Array.isArray(value)) return value.map(toHtml).join('');
  return escapeHtml(String(value ?? ''));
}

function html(strings: TemplateStringsArray, ...values: unknown[]): SafeHtml {
  return new SafeHtml(strings.reduce((out, s, i) => out + toHtml(values[i - 1]) + s));
}

function page(title: string, body: SafeHtml): string {
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · Example third-party server</title>
<style>
  body { font: 16px/1.5 system-ui, sans-serif; margin: 0; color: #1f2328; background: #f6f8fa; }
  header { background: #24292f; color: #fff; padding: 12px 24px; font-weight: 600; }
  main { box-sizing: border-box; width: calc(100% - 32px); max-width: 860px; margin: 24px auto; padding: 8px 24px 24px;
         background: #fff; border: 1px solid #d0d7de; border-radius: 8px; }
  h1 { font-size: 24px; margin: 16px 0 8px; }
  table { border-collapse: collapse; width: 100%; margin: 12px 0; }
  th, td { text-align: left; padding: 8px 10px; border-bottom: 1px solid #d0d7de; vertical-align: top; }
  th { font-size: 14px; color: #57606a; white-space: nowrap; }
  .who, .note { color: #57606a; } .note { font-size: 14px; }
  code { background: #eff1f3; padding: 1px 4px; border-radius: 4px; white-space: nowrap; }
  button { font: inherit; font-size: 14px; padding: 5px 12px; border: 1px solid #d0d7de; border-radius: 6px; background: #f6f8fa; cursor: pointer; }
</style></head>
<body><header>Example third-party server</header><main>${body}</main></body></html>`.value;
}

/** Reads the environment and listens. */
export async function main(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const port = Number(env.PORT ?? 4000);
  const { CLIENT_ID: clientId, CLIENT_SECRET: clientSecret } = env;
  if (!clientId || !clientSecret) {
    console.error('example server: set CLIENT_ID and CLIENT_SECRET (register the application first: see README.md beside this file)');
    process.exit(2);
  }
  const app = await createExampleApp({
    issuer: env.IDP_ISSUER ?? 'http://localhost:3000',
    clientId,
    clientSecret,
    redirectUri: env.REDIRECT_URI ?? `http://localhost:${port}/callback`,
  });
  app.listen(port, '127.0.0.1', () => console.log(`example third-party server on http://localhost:${port}`));
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
