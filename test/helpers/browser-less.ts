/**
 * A tiny user agent over fetch: a cookie jar, manual redirects, and form posts with the page's
 * CSRF token. It plays the person in the browser so tests drive the real pages over HTTP.
 */
export class UserAgent {
  private readonly cookies = new Map<string, string>();

  constructor(readonly base: string) {}

  private absorb(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  async request(url: string, init: RequestInit = {}): Promise<Response> {
    const target = new URL(url, this.base);
    const headers = new Headers(init.headers);
    if (target.origin === new URL(this.base).origin && this.cookies.size) headers.set('cookie', this.cookieHeader());
    const res = await fetch(target, { ...init, headers, redirect: 'manual' });
    if (target.origin === new URL(this.base).origin) this.absorb(res);
    return res;
  }

  get(url: string): Promise<Response> {
    return this.request(url);
  }

  /** Follows redirects on this origin; stops at the first response that is not a redirect to here. */
  async follow(url: string, max = 10): Promise<Response> {
    let res = await this.get(url);
    for (let i = 0; i < max; i += 1) {
      const location = res.headers.get('location');
      if (res.status < 300 || res.status >= 400 || !location) return res;
      const next = new URL(location, new URL(url, this.base));
      if (next.origin !== new URL(this.base).origin) return res;
      url = next.toString();
      res = await this.get(url);
    }
    return res;
  }

  async postForm(url: string, fields: Record<string, string>): Promise<Response> {
    return this.request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields).toString(),
    });
  }
}

export function csrfFrom(html: string): string {
  const match = /name="_csrf" value="([^"]+)"/.exec(html);
  if (!match) throw new Error('no CSRF token on the page');
  return match[1]!;
}

export function formAction(html: string, contains: string): string {
  const actions = [...html.matchAll(/<form[^>]*action="([^"]+)"/g)].map((m) => m[1]!);
  const found = actions.find((a) => a.includes(contains));
  if (!found) throw new Error(`no form posting to *${contains}* on the page: ${actions.join(', ')}`);
  return found.replace(/&amp;/g, '&');
}
