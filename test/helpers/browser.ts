import { request, type Agent } from 'node:http';
import { expect } from 'chai';
import { fillForm, findCsrf } from './html.js';

/** An answer, read to the end, and where it came from. */
export type Page = { status: number; headers: Headers; text: string; url: URL };

/** A request under way; `expect` checks its status (and Location) when it answers. */
export type Pending = Promise<Page> & { expect(status: number, location?: string | RegExp): Promise<Page> };

/**
 * The person's browser, without a screen: a cookie jar per site, redirects followed only when
 * asked, and forms posted with the CSRF token of the last page that carried one. Relative URLs
 * are on `base` (the identity provider); `also` names more sites whose redirects it follows,
 * `from` the loopback address it sends from (each address is another client to the server),
 * `headers` are sent with every request (X-Forwarded-For, to a server that trusts a proxy),
 * `userAgent` the User-Agent it sends (none unless given), and `agent` the connections it keeps
 * (Node's global agent unless given).
 */
export class Browser {
  /** The CSRF token of the last page read that carried one. */
  csrf = '';
  private readonly jars = new Map<string, Map<string, string>>();

  constructor(
    readonly base: string,
    private readonly options: { also?: string[]; from?: string; headers?: Record<string, string>; userAgent?: string; agent?: Agent } = {},
  ) {}

  request(url: string | URL, { method = 'GET', headers = {}, body }: { method?: string; headers?: Record<string, string>; body?: string | Buffer } = {}): Pending {
    const target = new URL(url, this.base);
    const cookie = this.cookieHeader(target);
    const answer = new Promise<Page>((resolve, reject) => {
      const sent = { ...(cookie ? { cookie } : {}), ...(this.options.userAgent ? { 'user-agent': this.options.userAgent } : {}), ...this.options.headers, ...headers };
      const req = request(target, { method, headers: sent, localAddress: this.options.from, agent: this.options.agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk)).on('error', reject);
        res.on('end', () => {
          const received = new Headers();
          for (let i = 0; i < res.rawHeaders.length; i += 2) received.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
          resolve(this.remember({ status: res.statusCode!, headers: received, text: Buffer.concat(chunks).toString('utf8'), url: target }));
        });
      });
      req.on('error', reject).end(body);
    });
    return pending(answer);
  }

  get(url: string | URL): Pending {
    return this.request(url);
  }

  /** Posts exactly `fields` as a form. */
  postForm(url: string | URL, fields: Record<string, string>): Pending {
    return this.request(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields).toString() });
  }

  /** Posts `fields` as the page's form would: with its CSRF token. */
  submit(url: string | URL, fields: Record<string, string> = {}): Pending {
    return this.postForm(url, { _csrf: this.csrf, ...fields });
  }

  /**
   * Sends the form of `page` that posts to an action containing `contains`, filled as a person
   * would: by its labels (see fillForm), with the hidden fields the page wrote.
   */
  fill(page: Page, contains: string, byLabel: Record<string, string> = {}): Pending {
    const { action, fields } = fillForm(page.text, contains, byLabel);
    return this.request(new URL(action, page.url), { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: fields.toString() });
  }

  /** Opens `start` (or goes on from an answer) and follows redirects within its sites, but not into `stopAt`. */
  follow(start: string | URL | Page, stopAt?: string): Pending {
    const sites = [this.base, ...(this.options.also ?? [])].map((site) => new URL(site).origin);
    const go = async () => {
      let page = typeof start === 'object' && 'status' in start ? start : await this.get(start);
      for (let hop = 0; hop < 10 && page.status >= 300 && page.status < 400 && page.headers.has('location'); hop += 1) {
        const next = new URL(page.headers.get('location')!, page.url);
        if (!sites.includes(next.origin) || (stopAt && next.href.startsWith(stopAt))) break;
        page = await this.get(next);
      }
      return page;
    };
    return pending(go());
  }

  /** The cookies this browser holds for the site of `url`. */
  cookies(url: string | URL = this.base): Map<string, string> {
    const { origin } = new URL(url, this.base);
    if (!this.jars.has(origin)) this.jars.set(origin, new Map());
    return this.jars.get(origin)!;
  }

  cookieHeader(url: string | URL = this.base): string {
    return [...this.cookies(url)].map(([name, value]) => `${name}=${value}`).join('; ');
  }

  private remember(page: Page): Page {
    const jar = this.cookies(page.url);
    for (const line of page.headers.getSetCookie()) {
      const [, name, value] = /^\s*([^=;]*?)\s*=\s*([^;]*?)\s*(;|$)/.exec(line)!;
      if (!value || /expires=Thu, 01 Jan 1970/i.test(line)) jar.delete(name!);
      else jar.set(name!, value);
    }
    this.csrf = findCsrf(page.text) ?? this.csrf;
    return page;
  }
}

function pending(answer: Promise<Page>): Pending {
  return Object.assign(answer, {
    expect: (status: number, location?: string | RegExp) =>
      answer.then((page) => {
        expect(page.status, `${page.url.pathname}${page.url.search}: ${page.text.slice(0, 300)}`).to.equal(status);
        if (typeof location === 'string') expect(page.headers.get('location'), 'Location').to.equal(location);
        if (location instanceof RegExp) expect(page.headers.get('location'), 'Location').to.match(location);
        return page;
      }),
  });
}

/** A new browser of `site` that has opened `path`, so it holds the page's cookies and CSRF token. */
export async function visit(site: string, path = '/login'): Promise<Browser> {
  const browser = new Browser(site);
  await browser.get(path).expect(200);
  return browser;
}

/**
 * Signs in through the sign-in form (in `site`'s browser, or a new one of that site) and opens
 * /groups where it leads: signing in starts a new session, and so a new CSRF token.
 */
export async function signIn(site: string | Browser, user: { username: string; password: string }): Promise<Browser> {
  const browser = typeof site === 'string' ? new Browser(site) : site;
  await browser.get('/login').expect(200);
  await browser.submit('/login', { login: user.username, password: user.password }).expect(302, '/groups');
  await browser.get('/groups').expect(200);
  return browser;
}
