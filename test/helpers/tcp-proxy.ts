import { createConnection, createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/** One accepted connection and its way to the target (opened once the proxy forwards). */
interface Pair {
  client: Socket;
  upstream: Socket | undefined;
  /** What each side sent while the proxy stalled, delivered when it forwards again. */
  held: { toUpstream: Buffer[]; toClient: Buffer[] };
}

/**
 * A TCP proxy on a free loopback port in front of a store (PostgreSQL, Redis), for faults the
 * service must survive:
 *
 * - `forward()`: bytes pass both ways (the start state, and recovery from any fault);
 * - `refuse()`: the port stops listening, so new connections are refused (ECONNREFUSED); open
 *   ones stay as they are;
 * - `cut()`: every open connection is reset mid-stream (ECONNRESET on the service's side), and
 *   so is every new one as soon as it is accepted, until the proxy forwards again: a store that
 *   went away;
 * - `faultWhenSent(text, fault)`: once the service sends `text` (a statement of the wire
 *   protocol, say), before the store receives it, either that connection is reset (`cut`) or
 *   the proxy stalls (`stall`): a connection lost, or a store gone silent, in the middle of a
 *   transaction;
 * - `stall()`: connections, open or new, are accepted and kept, but nothing passes either way;
 *   what was sent is held and delivered when the proxy forwards again, as after a network
 *   partition heals.
 */
export class TcpProxy {
  private readonly pairs = new Set<Pair>();
  private stalled = false;
  private cutting = false;
  private trigger: { text: string; fault: 'cut' | 'stall' } | undefined;
  private server: Server | undefined;

  private constructor(
    private readonly target: { host: string; port: number },
    /** The loopback port the proxy listens on, kept across refuse() and forward(). */
    public port: number,
  ) {}

  /** Starts a proxy forwarding to `targetUrl`'s host and port (e.g. postgres://…@127.0.0.1:5432/db). */
  static async start(targetUrl: string): Promise<TcpProxy> {
    const url = new URL(targetUrl);
    const proxy = new TcpProxy({ host: url.hostname, port: Number(url.port) }, 0);
    await proxy.listen();
    return proxy;
  }

  /** `targetUrl` with its host and port replaced by the proxy's. */
  urlFor(targetUrl: string): string {
    const url = new URL(targetUrl);
    url.hostname = '127.0.0.1';
    url.port = String(this.port);
    return url.toString();
  }

  /** How many connections the proxy holds open now. */
  get connections(): number {
    return this.pairs.size;
  }

  async forward(): Promise<void> {
    this.stalled = false;
    this.cutting = false;
    this.trigger = undefined;
    for (const pair of this.pairs) this.release(pair);
    if (!this.server) await this.listen();
  }

  /** Stops listening at once; open connections are left as they are (close() ends them too). */
  async refuse(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    // server.close's callback waits for every open connection to end: only the listening is stopped here.
    if (server) await new Promise<void>((resolve) => {
      server.close();
      setImmediate(resolve);
    });
  }

  cut(): void {
    this.cutting = true;
    this.resetAll();
  }

  faultWhenSent(text: string, fault: 'cut' | 'stall'): void {
    this.trigger = { text, fault };
  }

  stall(): void {
    this.stalled = true;
  }

  async close(): Promise<void> {
    this.resetAll();
    await this.refuse();
  }

  private resetAll(): void {
    for (const pair of [...this.pairs]) this.drop(pair, true);
  }

  private async listen(): Promise<void> {
    const server = createServer((client) => this.accept(client));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  private accept(client: Socket): void {
    const pair: Pair = { client, upstream: undefined, held: { toUpstream: [], toClient: [] } };
    if (this.cutting) {
      client.on('error', () => {});
      client.resetAndDestroy();
      return;
    }
    this.pairs.add(pair);
    client.on('data', (chunk: Buffer) => {
      if (this.trigger && chunk.includes(this.trigger.text)) {
        const { fault } = this.trigger;
        this.trigger = undefined;
        if (fault === 'cut') return this.drop(pair, true);
        this.stalled = true;
      }
      if (this.stalled || !pair.upstream) pair.held.toUpstream.push(chunk);
      else pair.upstream.write(chunk);
    });
    client.on('error', () => this.drop(pair, false));
    client.on('close', () => this.drop(pair, false));
    if (!this.stalled) this.release(pair);
  }

  /** Connects a pair to the target if it is not yet, and delivers what was held. */
  private release(pair: Pair): void {
    if (!pair.upstream) {
      const upstream = createConnection(this.target);
      pair.upstream = upstream;
      upstream.on('data', (chunk) => {
        if (this.stalled) pair.held.toClient.push(chunk);
        else pair.client.write(chunk);
      });
      upstream.on('error', () => this.drop(pair, true));
      upstream.on('close', () => this.drop(pair, false));
    }
    for (const chunk of pair.held.toUpstream.splice(0)) pair.upstream.write(chunk);
    for (const chunk of pair.held.toClient.splice(0)) pair.client.write(chunk);
  }

  /** Ends a pair: `reset` sends the client a TCP RST, as a store that vanished does. */
  private drop(pair: Pair, reset: boolean): void {
    if (!this.pairs.delete(pair)) return;
    if (reset) pair.client.resetAndDestroy();
    else pair.client.destroy();
    pair.upstream?.destroy();
  }
}
