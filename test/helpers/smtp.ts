import type { AddressInfo } from 'node:net';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { useHooks } from './app.js';

/**
 * A real SMTP server on a free loopback port that keeps every message it receives (parsed with
 * mailparser), so tests see exactly what a person's mailbox would.
 */
export interface MailServer {
  /** smtp://127.0.0.1:<port>, for SMTP_URL. */
  url: string;
  /** Every message received so far, in order of arrival. */
  received: ParsedMail[];
  /** The next message to `to` not yet taken by an earlier call, waiting for it if need be. */
  next(to: string, timeoutMs?: number): Promise<ParsedMail>;
  /** How many messages went to `to`. */
  countTo(to: string): number;
  close(): Promise<void>;
}

function recipients(mail: ParsedMail): string[] {
  const to = Array.isArray(mail.to) ? mail.to : mail.to ? [mail.to] : [];
  return to.flatMap((a) => a.value.map((v) => (v.address ?? '').toLowerCase()));
}

export async function startMailServer(): Promise<MailServer> {
  const received: ParsedMail[] = [];
  const taken = new Set<ParsedMail>();
  const waiters = new Set<() => void>();
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, _session, callback) {
      simpleParser(stream).then(
        (mail) => {
          received.push(mail);
          for (const wake of waiters) wake();
          callback();
        },
        (err: Error) => callback(err),
      );
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.server.address() as AddressInfo;

  const untaken = (to: string) => received.find((m) => !taken.has(m) && recipients(m).includes(to.toLowerCase()));

  return {
    url: `smtp://127.0.0.1:${port}`,
    received,
    async next(to, timeoutMs = 10_000) {
      let mail = untaken(to);
      if (!mail) {
        mail = await new Promise<ParsedMail>((resolve, reject) => {
          const timer = setTimeout(() => {
            waiters.delete(wake);
            reject(new Error(`no mail to ${to} within ${timeoutMs} ms`));
          }, timeoutMs);
          const wake = () => {
            const found = untaken(to);
            if (!found) return;
            clearTimeout(timer);
            waiters.delete(wake);
            resolve(found);
          };
          waiters.add(wake);
        });
      }
      taken.add(mail);
      return mail;
    },
    countTo: (to) => received.filter((m) => recipients(m).includes(to.toLowerCase())).length,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The suite's mail server: started before its tests, closed after them. */
export function useMailServer(): MailServer {
  return useHooks(startMailServer, (server) => server.close());
}

/** The one link a message carries to this service (from its plain-text body). */
export function linkIn(mail: ParsedMail, base: string): URL {
  const escaped = base.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const match = new RegExp(`${escaped}/[^\\s]+`).exec(mail.text ?? '');
  if (!match) throw new Error(`no link to ${base} in the message: ${mail.text}`);
  return new URL(match[0]);
}
