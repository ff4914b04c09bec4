import { request } from 'node:http';

/**
 * A credential-stuffing flood: `connections` loops posting wrong passwords for made-up accounts
 * to /login, each request from another loopback address (127.1.0.0/16), so neither the per-IP
 * nor the per-account limit stops it: every attempt reaches the password check, which is what
 * the bounded KDF queue has to absorb. Runs until stopped; reports what it got.
 */
export interface FloodReport {
  attempts: number;
  seconds: number;
  byStatus: Record<number, number>;
  p99: number;
}

interface Reply {
  status: number;
  body: string;
  cookie?: string;
}

function send(url: URL, options: { method: string; localAddress: string; cookie?: string; form?: string }): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = {};
    if (options.cookie) headers.cookie = options.cookie;
    if (options.form) headers['content-type'] = 'application/x-www-form-urlencoded';
    const req = request(url, { method: options.method, headers, localAddress: options.localAddress, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const cookie = (res.headers['set-cookie'] ?? []).map((line) => line.split(';')[0]).join('; ');
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), cookie: cookie || undefined });
      });
    });
    req.on('error', reject);
    req.end(options.form);
  });
}

export function startFlood(base: string, connections: number): { stop(): Promise<FloodReport> } {
  const login = new URL('/login', base);
  const latencies: number[] = [];
  const byStatus: Record<number, number> = {};
  let running = true;
  let sequence = 0;
  const nextAddress = () => {
    sequence += 1;
    return `127.1.${(sequence >> 8) & 255}.${(sequence & 255) || 1}`;
  };
  const started = performance.now();

  async function loop(id: number): Promise<void> {
    const form = await send(login, { method: 'GET', localAddress: nextAddress() });
    const csrf = /name="_csrf" value="([^"]+)"/.exec(form.body)?.[1];
    if (!csrf || !form.cookie) throw new Error(`the flood found no sign-in form: ${form.status}`);
    for (let n = 0; running; n += 1) {
      const body = new URLSearchParams({ _csrf: csrf, login: `nobody-${id}-${n}`, password: 'a wrong password' }).toString();
      const t = performance.now();
      const reply = await send(login, { method: 'POST', localAddress: nextAddress(), cookie: form.cookie, form: body }).catch(() => ({ status: 0, body: '' }));
      latencies.push(performance.now() - t);
      byStatus[reply.status] = (byStatus[reply.status] ?? 0) + 1;
    }
  }

  const loops = Array.from({ length: connections }, (_, id) => loop(id));
  return {
    async stop() {
      running = false;
      await Promise.all(loops);
      latencies.sort((a, b) => a - b);
      return {
        attempts: latencies.length,
        seconds: (performance.now() - started) / 1000,
        byStatus,
        p99: latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * 0.99))] ?? 0,
      };
    },
  };
}
