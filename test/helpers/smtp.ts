import type { AddressInfo } from 'node:net';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { escapeRegExp } from './api.js';
import { useHooks, waitFor } from './app.js';

/**
 * A real SMTP server on a free loopback port that keeps every message it receives (parsed with
 * mailparser), so tests see exactly what a person's mailbox would.
 */
export async function startMailServer() {
  const received: ParsedMail[] = [];
  const taken = new Set<ParsedMail>();
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, _session, callback) {
      simpleParser(stream).then((mail) => {
        received.push(mail);
        callback();
      }, callback);
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const sentTo = (address: string) => (mail: ParsedMail) =>
    [mail.to ?? []].flat().some((to) => to.value.some((v) => v.address?.toLowerCase() === address.toLowerCase()));
  const untaken = (address: string, subject?: string) => received.find((mail) => !taken.has(mail) && sentTo(address)(mail) && (subject === undefined || mail.subject === subject));
  return {
    /** smtp://127.0.0.1:<port>, for SMTP_URL. */
    url: `smtp://127.0.0.1:${(server.server.address() as AddressInfo).port}`,
    /** Every message received so far, in order of arrival. */
    received,
    /** The next message to `address` not yet taken by an earlier call, waiting for it if need be. */
    async next(address: string, timeoutMs = 10_000): Promise<ParsedMail> {
      await waitFor(async () => untaken(address) !== undefined, () => `no mail to ${address} within ${timeoutMs} ms`, timeoutMs);
      const mail = untaken(address)!;
      taken.add(mail);
      return mail;
    },
    /** The next message to `address` with `subject` not yet taken, waiting for it if need be (others stay untaken). */
    async nextWith(address: string, subject: string, timeoutMs = 10_000): Promise<ParsedMail> {
      await waitFor(async () => untaken(address, subject) !== undefined, () => `no mail "${subject}" to ${address} within ${timeoutMs} ms`, timeoutMs);
      const mail = untaken(address, subject)!;
      taken.add(mail);
      return mail;
    },
    /** How many messages went to `address`. */
    countTo: (address: string) => received.filter(sentTo(address)).length,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export type MailServer = Awaited<ReturnType<typeof startMailServer>>;

/** The suite's mail server: started before its tests, closed after them. */
export function useMailServer(): MailServer {
  return useHooks(startMailServer, (server) => server.close());
}

/** The one link a message carries to this service (from its plain-text body). */
export function linkIn(mail: ParsedMail, base: string): URL {
  const match = new RegExp(`${escapeRegExp(base)}/[^\\s]+`).exec(mail.text ?? '');
  if (!match) throw new Error(`no link to ${base} in the message: ${mail.text}`);
  return new URL(match[0]);
}
