import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { verify } from '@octokit/webhooks-methods';
import type { Knex } from 'knex';
import { groupAccess } from '../helpers/factories.js';
import { createWebhook, type WebhookDeps } from '../../src/services/webhooks/manage.js';
import type { WebhookEvent } from '../../src/vocabulary.js';

/** One POST a receiver got, as a receiver of GitHub's webhooks reads it. */
export interface Received {
  event: string;
  delivery: string;
  signature: string;
  userAgent: string;
  contentType: string;
  body: string;
  json: Record<string, unknown> & { event: string; group: { id: number; path?: string }; actor: unknown; data: Record<string, unknown> };
  /** What `@octokit/webhooks-methods` (GitHub's own verifier) says of the signature with the webhook's secret. */
  verified: boolean;
}

/**
 * A real HTTP server standing in for a third party's webhook endpoint: it checks each
 * delivery's signature with the secret it was told, records it, and answers what `answer` says
 * (200 by default): true when it answered itself. It listens on a free loopback port, or on `port`.
 */
export async function startReceiver(secret: string, answer: (req: IncomingMessage, res: ServerResponse) => boolean = () => false, port = 0) {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      void (async () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const signature = String(req.headers['x-horizon-signature-256'] ?? '');
        received.push({
          event: String(req.headers['x-horizon-event'] ?? ''),
          delivery: String(req.headers['x-horizon-delivery'] ?? ''),
          signature,
          userAgent: String(req.headers['user-agent'] ?? ''),
          contentType: String(req.headers['content-type'] ?? ''),
          body,
          json: JSON.parse(body) as Received['json'],
          verified: await verify(secret, body, signature),
        });
        if (answer(req, res)) return;
        res.writeHead(200, { 'Content-Type': 'text/plain' }).end('thanks');
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    received,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export type Receiver = Awaited<ReturnType<typeof startReceiver>>;

export const SECRET = 'a-receiver-secret-of-32-characters!';

/** A webhook of the group, made by its owner through the service, listening to `events`. */
export async function makeWebhook(db: Knex, ownerId: number, groupId: number, url: string, events: readonly WebhookEvent[], deps: Partial<WebhookDeps> = {}) {
  return createWebhook({ db, cipher: undefined, allowPrivate: true, ...deps }, await groupAccess(db, ownerId, groupId), { url, secret: SECRET, events });
}
