import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type Page } from 'playwright-core';

/**
 * What the browser tests (and docs/screenshots/take.ts) share: the system's Chromium driven by
 * playwright-core (no browser is ever downloaded), signing in through the real page, and a
 * stand-in third-party server that records what arrives at its callback.
 */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
}

/** Signs in on /login by the form's visible labels; ends on the page the sign-in leads to (/groups). */
export async function signInThroughPage(page: Page, base: string, user: { username: string; password: string }): Promise<void> {
  await page.goto(`${base}/login`);
  await page.getByLabel('Username or email').fill(user.username);
  await page.getByLabel('Password').fill(user.password);
  await Promise.all([page.waitForURL(`${base}/groups`), page.getByRole('button', { name: 'Sign in' }).click()]);
}

export interface CallbackServer {
  /** http://127.0.0.1:<port>/callback */
  url: string;
  /** The first request that reached /callback, as a full URL. */
  received: Promise<URL>;
  close(): Promise<void>;
}

/** A tiny third-party server: its /callback answers a short page and records the query it got. */
export async function startCallbackServer(): Promise<CallbackServer> {
  let resolve!: (url: URL) => void;
  const received = new Promise<URL>((r) => {
    resolve = r;
  });
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (url.pathname === '/callback') resolve(new URL(req.url ?? '/', `http://${req.headers.host}`));
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end('<!doctype html><title>Callback</title><p>Signed in.</p>');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/callback`,
    received,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
