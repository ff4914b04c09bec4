import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import ejs from 'ejs';
import nodemailer from 'nodemailer';
import { type Language, translateHtml, translator } from '../i18n.js';
import type { Logger } from '../log.js';
import { VIEWS } from '../paths.js';

/** The messages the service sends; each is `views/mail/<name>.txt.ejs` and `views/mail/<name>.html.ejs`. */
export type MailTemplate = 'verify-email' | 'reset-password' | 'security-notice' | 'confirm-signup' | 'confirm-email-change' | 'address-in-use';

export interface Mail {
  to: string;
  subject: string;
  template: MailTemplate;
  /** The template's values; `link` is the one link the message exists to carry. */
  data: { link: string; [key: string]: unknown };
  /**
   * The language it is written in: the page's that caused it (a reset asked for on a German
   * page is mailed in German). English when none did (the CLI, an administrator's action).
   */
  lang?: Language;
}

export interface Mailer {
  send(mail: Mail): Promise<void>;
  close(): void;
}

export interface MailerOptions {
  /** SMTP server (`smtp://user:pass@host:587`, `smtps://…:465`); unset, messages are written to `dir`. */
  smtpUrl: string | undefined;
  from: string;
  /** Where messages go as `.eml` files when there is no SMTP server. */
  dir: string;
  /** With no SMTP server outside production, the link is logged too, so a developer can follow it. */
  logLinks: boolean;
  logger: Logger;
}

const compiled = new Map<string, ejs.TemplateFunction>();

function template(file: string): ejs.TemplateFunction {
  let fn = compiled.get(file);
  if (!fn) {
    const filename = join(VIEWS, 'mail', file);
    fn = ejs.compile(readFileSync(filename, 'utf8'), { filename, root: VIEWS, cache: true });
    compiled.set(file, fn);
  }
  return fn;
}

/**
 * The plain-text and HTML bodies of a message (values escaped in the HTML one), in its language:
 * templates get `lang`, `t` and `tHtml` as pages do (views/mail/* not yet translated are English).
 */
export function renderMail(mail: Mail): { text: string; html: string } {
  const lang = mail.lang ?? 'en';
  const words = { lang, t: translator(lang), tHtml: (key: string, values?: Record<string, unknown>) => translateHtml(lang, key, values) };
  const locals = { subject: mail.subject, ...mail.data, ...words };
  return { text: template(`${mail.template}.txt.ejs`)(locals), html: template(`${mail.template}.html.ejs`)(locals) };
}

/**
 * Mail through nodemailer: over SMTP when `SMTP_URL` is set, otherwise each message becomes an
 * `.eml` file (a complete RFC 5322 message any mail program opens) so that the service runs with
 * no other server. A message that cannot be sent throws; callers decide whether the person sees it.
 */
export function createMailer(options: MailerOptions): Mailer {
  const transport = options.smtpUrl
    ? nodemailer.createTransport(options.smtpUrl)
    : nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });

  return {
    async send(mail) {
      const info = await transport.sendMail({ from: options.from, to: mail.to, subject: mail.subject, ...renderMail(mail) });
      if (options.smtpUrl) {
        options.logger.info({ mail: mail.template, messageId: info.messageId }, 'mail sent');
        return;
      }
      await mkdir(options.dir, { recursive: true });
      const file = join(options.dir, `${new Date().toISOString().replace(/[:.]/g, '-')}-${randomBytes(4).toString('hex')}.eml`);
      await writeFile(file, (info as unknown as { message: Buffer }).message, { mode: 0o600 });
      options.logger.info({ mail: mail.template, file, ...(options.logLinks ? { link: mail.data.link } : {}) }, 'mail written (no SMTP_URL set)');
    },
    close() {
      transport.close();
    },
  };
}
