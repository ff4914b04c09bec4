import { isIP } from 'node:net';
import type { Context, Next } from 'koa';

/**
 * The client's address as the audit log and the rate limits see it. Koa derives it from
 * X-Forwarded-For only for the configured number of proxy hops (app.proxy, app.maxIpsCount);
 * what a hop forwards is still only text, so anything that is not an IP address (a port
 * appended, garbage, a kilobyte of it) falls back to the address of the socket.
 */
export function clientAddress(ctx: Context, next: Next): Promise<void> {
  const derived = withoutPort(ctx.ip);
  ctx.request.ip = isIP(derived) ? derived : (ctx.socket.remoteAddress ?? '');
  return next();
}

/** `203.0.113.7:51234` → `203.0.113.7`, `[2001:db8::1]:443` → `2001:db8::1`. */
function withoutPort(value: string): string {
  const bracketed = /^\[([0-9a-fA-F:.]+)\](?::[0-9]{1,5})?$/.exec(value);
  if (bracketed) return bracketed[1]!;
  const v4 = /^([0-9.]+):[0-9]{1,5}$/.exec(value);
  return v4 ? v4[1]! : value;
}

/** Koa believes X-Forwarded-* from exactly `hops` proxies (0: none). */
export function trustProxyHops(app: { proxy: boolean; maxIpsCount: number }, hops: number): void {
  app.proxy = hops > 0;
  app.maxIpsCount = hops;
}
