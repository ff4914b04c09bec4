import type { AddressInfo } from 'node:net';
import { createServer, type Server } from 'node:http';
import { createExampleApp, SESSION_COOKIE, type ExampleSession } from '../../examples/third-party-server/server.js';
import type { RunningIdp } from './app.js';
import { csrfFrom, formAction, UserAgent } from './browser-less.js';
import { makeApp } from './factories.js';

/**
 * A browser-less browser for two sites at once (the identity provider and a third-party
 * server): one cookie jar per origin, and redirects followed across origins, as a real browser
 * would between the two.
 */
export class TwoSiteBrowser {
  private readonly agents = new Map<string, UserAgent>();

  agent(url: string | URL): UserAgent {
    const { origin } = new URL(url);
    let agent = this.agents.get(origin);
    if (!agent) this.agents.set(origin, (agent = new UserAgent(origin)));
    return agent;
  }

  /** The value of a cookie this browser holds for the origin of `url`. */
  cookie(url: string | URL, name: string): string | undefined {
    const pair = this.agent(url).cookieHeader().split('; ').find((p) => p.startsWith(`${name}=`));
    return pair?.slice(name.length + 1);
  }

  request(url: string | URL, init: RequestInit = {}): Promise<Response> {
    return this.agent(url).request(new URL(url).toString(), init);
  }

  postForm(url: string | URL, fields: Record<string, string>): Promise<Response> {
    return this.agent(url).postForm(new URL(url).toString(), fields);
  }

  /** Follows every redirect, whatever its origin; returns the last response and where it came from. */
  async follow(start: string | URL, first?: Response, max = 15): Promise<{ res: Response; url: URL }> {
    let url = new URL(start);
    let res = first ?? (await this.request(url));
    for (let i = 0; i < max; i += 1) {
      const location = res.headers.get('location');
      if (res.status < 300 || res.status >= 400 || !location) return { res, url };
      url = new URL(location, url);
      res = await this.request(url);
    }
    throw new Error(`more than ${max} redirects from ${start}`);
  }
}

/**
 * Opens `start` (a page of the third-party server) and plays the person at the identity
 * provider: signs in when asked, then clicks Authorize (or Cancel when `deny`), until the
 * browser is back on another site. Returns that last response, its body and its URL.
 */
export async function signInAndAuthorize(
  browser: TwoSiteBrowser,
  idpUrl: string,
  start: string,
  person: { login: string; password: string; deny?: boolean },
): Promise<{ res: Response; url: URL; body: string }> {
  const idp = new URL(idpUrl).origin;
  let { res, url } = await browser.follow(start);
  for (let step = 0; step < 4 && url.origin === idp; step += 1) {
    if (res.status !== 200) throw new Error(`unexpected ${res.status} at ${url} on step ${step}`);
    const page = await res.text();
    const csrf = csrfFrom(page);
    const action: { path: string; fields: Record<string, string> } = page.includes('name="password"')
      ? { path: formAction(page, '/login'), fields: { _csrf: csrf, login: person.login, password: person.password } }
      : { path: formAction(page, person.deny ? '/abort' : '/confirm'), fields: { _csrf: csrf } };
    const target = new URL(action.path, url);
    ({ res, url } = await browser.follow(target, await browser.postForm(target, action.fields)));
  }
  if (url.origin === idp) throw new Error(`still at the identity provider after four steps: ${url}`);
  return { res, url, body: await res.text() };
}

export interface RunningExample {
  /** The example's base URL, e.g. http://127.0.0.1:40124 */
  url: string;
  redirectUri: string;
  clientId: string;
  clientSecret: string;
  /** The example's server-side sessions, by the id in its cookie. */
  sessions: Map<string, ExampleSession>;
  server: Server;
  /** The session the browser holds at the example (by its cookie). */
  sessionOf(browser: TwoSiteBrowser): ExampleSession | undefined;
  stop(): Promise<void>;
}

/**
 * The example third-party server in-process on a random loopback port, registered at the
 * identity provider as an application of the group (owned by `ownerId`) with the port's callback.
 */
export async function startExample(idp: RunningIdp, ownerId: number, groupId: number): Promise<RunningExample> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const redirectUri = `${url}/callback`;
  const { clientId, clientSecret } = await makeApp(idp.idp.db, ownerId, groupId, { callbackURL: redirectUri, name: 'Example third-party server' });
  const sessions = new Map<string, ExampleSession>();
  const app = await createExampleApp({ issuer: idp.url, clientId, clientSecret, redirectUri, sessions });
  server.on('request', app.callback());
  return {
    url,
    redirectUri,
    clientId,
    clientSecret,
    sessions,
    server,
    sessionOf(browser) {
      const id = browser.cookie(url, SESSION_COOKIE);
      return id ? sessions.get(id) : undefined;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
