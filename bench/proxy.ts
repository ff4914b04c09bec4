import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** One instance behind the proxy, as its health checks last saw it. */
export interface Backend {
  name: string;
  port: number;
  /** ready: /readyz 200; draining: /readyz 503; down: no answer. */
  state: 'ready' | 'draining' | 'down';
  /** Which process of this instance serves it (the soak counts restarts here); shown in `x-soak-backend`. */
  generation: number;
}

export interface ProxyStats {
  /** Requests sent on to the other instance after a refused connection. */
  retriedRefused: number;
  /** Requests sent again after a kept-alive upstream socket was reset before any answer. */
  retriedReset: number;
  /** Requests neither instance took: answered 502. */
  noBackend: number;
}

/** Hop-by-hop headers: each side of the proxy has its own connection. */
const HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'proxy-connection', 'upgrade', 'te', 'trailer']);

const HEALTH_INTERVAL_MS = 250;

/**
 * A loopback round-robin HTTP proxy, as a load balancer with health checks runs in front of the
 * service: each request goes to the next instance whose /readyz last answered 200 (the Host header
 * is passed on unchanged, so the instances see the issuer's host). It polls every instance's
 * /readyz every 250 ms and sends nothing new to one that answers 503 (draining). A refused
 * connection is tried on the other instance, and so is a request whose kept-alive upstream socket
 * was reset before any byte of an answer (Node's advice for reused sockets; nginx does the same
 * for an upstream that closed an idle connection). Upstream idle sockets are dropped after 4 s,
 * before the service's own 5 s keep-alive timeout closes them under a request.
 *
 * Each answer carries `x-soak-backend: <name>:<generation>`, the process that gave it.
 */
export class RoundRobinProxy {
  readonly stats: ProxyStats = { retriedRefused: 0, retriedReset: 0, noBackend: 0 };
  private readonly server = http.createServer((req, res) => void this.forward(req, res));
  private readonly agents = new Map<string, http.Agent>();
  private next = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(readonly backends: Backend[]) {
    for (const b of backends) this.agents.set(b.name, new http.Agent({ keepAlive: true, maxSockets: 64, timeout: 4000 }));
    // Clients keep their connections to the proxy while instances come and go behind it.
    this.server.keepAliveTimeout = 120_000;
  }

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.timer = setInterval(() => void this.checkAll(), HEALTH_INTERVAL_MS);
    await this.checkAll();
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const agent of this.agents.values()) agent.destroy();
  }

  async checkAll(): Promise<void> {
    await Promise.all(this.backends.map(async (b) => (b.state = await health(b.port))));
  }

  /** The ready instances, starting with the next in turn; none ready: all of them, in turn. */
  private order(): Backend[] {
    const start = this.next;
    this.next = (this.next + 1) % this.backends.length;
    const turn = this.backends.map((_, i) => this.backends[(start + i) % this.backends.length]!);
    const ready = turn.filter((b) => b.state === 'ready');
    return ready.length ? ready : turn;
  }

  private async forward(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const headers: http.OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(req.headers)) if (!HOP.has(name) && value !== undefined) headers[name] = value;
    if (body.length) headers['content-length'] = body.length;
    const candidates = this.order();
    for (let i = 0; i < candidates.length; i += 1) {
      const backend = candidates[i]!;
      // The same instance once more after a reset of a reused socket; the next one after a refusal.
      for (let attempt = 0; attempt < 2; attempt += 1) {
        const outcome = await this.tryOnce(backend, req, headers, body, res);
        if (outcome === 'answered') return;
        if (outcome === 'refused') {
          if (i + 1 < candidates.length) this.stats.retriedRefused += 1;
          break;
        }
        this.stats.retriedReset += 1;
      }
    }
    this.stats.noBackend += 1;
    if (!res.headersSent) {
      res.writeHead(502, { 'content-type': 'text/plain' });
      res.end('no instance answered');
    } else {
      res.destroy();
    }
  }

  private tryOnce(
    backend: Backend,
    req: http.IncomingMessage,
    headers: http.OutgoingHttpHeaders,
    body: Buffer,
    res: http.ServerResponse,
  ): Promise<'answered' | 'refused' | 'reset'> {
    const generation = backend.generation;
    return new Promise((resolve) => {
      let answered = false;
      const upstream = http.request(
        { host: '127.0.0.1', port: backend.port, method: req.method, path: req.url, headers, agent: this.agents.get(backend.name) },
        (reply) => {
          answered = true;
          const out: http.OutgoingHttpHeaders = {};
          for (const [name, value] of Object.entries(reply.headers)) if (!HOP.has(name) && value !== undefined) out[name] = value;
          out['x-soak-backend'] = `${backend.name}:${generation}`;
          res.writeHead(reply.statusCode ?? 502, out);
          reply.pipe(res);
          reply.on('error', () => res.destroy());
          reply.on('end', () => resolve('answered'));
        },
      );
      upstream.on('error', (err: NodeJS.ErrnoException) => {
        if (answered) {
          // Cut in the middle of an answer: the client sees it cut too.
          res.destroy();
          resolve('answered');
        } else if (err.code === 'ECONNREFUSED') resolve('refused');
        else if (upstream.reusedSocket && err.code === 'ECONNRESET') resolve('reset');
        else {
          if (!res.headersSent) {
            res.writeHead(502, { 'content-type': 'text/plain', 'x-soak-backend': `${backend.name}:${generation}` });
            res.end(`upstream error: ${err.code ?? err.message}`);
          }
          resolve('answered');
        }
      });
      upstream.end(body);
    });
  }
}

/** What one /readyz probe says, within 1 s. */
function health(port: number): Promise<Backend['state']> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/readyz', agent: false, timeout: 1000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200 ? 'ready' : res.statusCode === 503 ? 'draining' : 'down');
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve('down'));
  });
}
