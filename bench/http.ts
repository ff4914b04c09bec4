import http from 'node:http';

/**
 * A lean HTTP client for the multi-step drivers (code minting, whole flows): node:http over a
 * keep-alive agent, a cookie jar per browser, no redirects followed by itself. autocannon drives
 * the single-request scenarios; this only plays a browser, as cheaply as it can, because it
 * shares the machine's two cores with the server it measures.
 */
const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

export interface Reply {
  status: number;
  location: string | undefined;
  /** Seconds, from a Retry-After header. */
  retryAfter: number | undefined;
  setCookies: string[];
  headers: http.IncomingHttpHeaders;
  body: string;
}

export function send(
  url: URL,
  init: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...init.headers };
    if (init.body !== undefined) headers['content-length'] = String(Buffer.byteLength(init.body));
    const req = http.request(url, { method: init.method ?? 'GET', headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const cookies = res.headers['set-cookie'] ?? [];
        resolve({
          status: res.statusCode ?? 0,
          location: res.headers.location,
          retryAfter: res.headers['retry-after'] === undefined ? undefined : Number(res.headers['retry-after']),
          setCookies: cookies,
          headers: res.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        });
      });
      res.on('error', reject);
    });
    req.setTimeout(60_000, () => req.destroy(new Error(`timeout: ${init.method ?? 'GET'} ${url.pathname}`)));
    req.on('error', reject);
    req.end(init.body);
  });
}

/** One person's browser: a cookie jar scoped to the server under test. */
export class Browser {
  private readonly cookies = new Map<string, string>();

  constructor(readonly base: string) {}

  async request(path: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Reply> {
    const headers: Record<string, string> = { accept: 'text/html', ...init.headers };
    if (this.cookies.size) headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const reply = await send(new URL(path, this.base), { ...init, headers });
    for (const line of reply.setCookies) {
      const pair = line.slice(0, line.indexOf(';') === -1 ? undefined : line.indexOf(';'));
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return reply;
  }

  get(path: string): Promise<Reply> {
    return this.request(path);
  }

  postForm(path: string, fields: Record<string, string>): Promise<Reply> {
    return this.request(path, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields).toString(),
    });
  }
}

/** Runs `task` on `concurrency` parallel loops until `count` tasks have succeeded; a failure stops everything. */
export async function inParallel(count: number, concurrency: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, count) }, async () => {
      while (next < count) {
        const i = next;
        next += 1;
        await task(i);
      }
    }),
  );
}
