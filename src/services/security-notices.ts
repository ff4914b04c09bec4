import { describeUserAgent } from '../presenters/session.js';
import { asLanguage, formatDate, translator, type Language } from '../i18n.js';
import type { SeenFrom } from './sessions.js';
import type { MailDeps } from './verification.js';

/**
 * Security notices: a mail to the account's address after each change that an intruder would
 * make to keep or widen their access (a password changed, a second factor or passkey added or
 * removed, a personal access token made, the address itself changed, a password set on an account
 * that had none, an upstream sign-in method linked or unlinked). Each says what happened,
 * when, from which browser and address, and what to do if it was not the owner. A notice is
 * sent in the background: the change it reports is already made, and a mail server that is
 * away must not fail the page that made it.
 */
export type SecurityEvent =
  | 'password-changed'
  | 'password-reset'
  | 'password-set'
  | 'email-changed'
  | 'two-factor-enabled'
  | 'two-factor-disabled'
  | 'two-factor-reset'
  | 'recovery-codes-replaced'
  | 'passkey-added'
  | 'passkey-removed'
  | 'personal-token-created'
  | 'sign-in-method-linked'
  | 'sign-in-method-unlinked';

/**
 * The settings page where the owner sees (and undoes) each change. Its words, the subject and
 * what happened (`{{detail}}`: the event's detail, a name or an address), are in the `mail`
 * namespace (`mail:notice.events.<event>`).
 */
const PAGES: Readonly<Record<SecurityEvent, string>> = {
  'password-changed': '/account/settings/password',
  'password-reset': '/account/settings/sessions',
  'email-changed': '/account/settings/profile',
  'two-factor-enabled': '/account/settings/two-factor',
  'two-factor-disabled': '/account/settings/two-factor',
  'two-factor-reset': '/account/settings/two-factor',
  'recovery-codes-replaced': '/account/settings/two-factor',
  'passkey-added': '/account/settings/passkeys',
  'passkey-removed': '/account/settings/passkeys',
  'personal-token-created': '/account/settings/tokens',
  'password-set': '/account/settings/sign-in-methods',
  'sign-in-method-linked': '/account/settings/sign-in-methods',
  'sign-in-method-unlinked': '/account/settings/sign-in-methods',
};

/** Every event (for the tests of every notice's words). */
export const SECURITY_EVENTS = Object.keys(PAGES) as SecurityEvent[];

/** A change made with the admin CLI on the server: no browser, no client address. */
export const COMMAND_LINE = 'command-line';

/** Where a change came from: a request's address and user agent, or the command line. */
export type NoticeSource = SeenFrom | typeof COMMAND_LINE;

export interface NoticeRecipient {
  id: number;
  username: string;
  email: string;
  /** The language the account chose for its mails (users.language), if any. */
  language?: string | null;
}

/**
 * The words and values of one notice (exported for the tests of its wording), in `options.lang`,
 * else the language the account chose, else the language of the page the change came from
 * (`from.lang`), else English.
 */
export function securityNotice(issuer: string, user: NoticeRecipient, event: SecurityEvent, from: NoticeSource, options: { detail?: string; at?: Date; lang?: Language } = {}) {
  const lang = options.lang ?? asLanguage(user.language) ?? (from === COMMAND_LINE ? undefined : from.lang) ?? 'en';
  const t = translator(lang);
  const at = options.at ?? new Date();
  return {
    to: user.email,
    subject: t(`mail:notice.events.${event}.subject`),
    template: 'security-notice' as const,
    lang,
    data: {
      link: `${issuer}${PAGES[event]}`,
      username: user.username,
      what: t(`mail:notice.events.${event}.what`, { detail: options.detail ?? '' }),
      when: mailDate(at, lang),
      browser: from === COMMAND_LINE ? t('mail:seen.commandLine') : describeUserAgent(from.userAgent, lang),
      address: from === COMMAND_LINE ? t('mail:seen.serverItself') : from.ip || t('mail:seen.unknownAddress'),
      resetLink: `${issuer}/forgot-password`,
      sessionsLink: `${issuer}/account/settings/sessions`,
    },
  };
}

/**
 * When, as a mail says it: in UTC, written out (the mail is read anywhere, and a bare ISO string
 * is hard on people); in English as the RFC 7231 date it always was, otherwise as pages show dates.
 */
export function mailDate(at: Date, lang: Language): string {
  return lang === 'en' ? at.toUTCString().replace('GMT', 'UTC') : formatDate(at, lang);
}

/**
 * Mails `user` a notice of `event` made from `from` (the request's address and user agent), in
 * the background; a failure is logged with the account's id, never thrown. `to` overrides the
 * recipient (an address change is reported to the old address).
 */
export function sendSecurityNotice(
  deps: MailDeps,
  user: NoticeRecipient,
  event: SecurityEvent,
  from: NoticeSource,
  options: { detail?: string; to?: string; lang?: Language } = {},
): void {
  mailSecurityNotice(deps, user, event, from, options).catch((err: unknown) => deps.log.error({ err, userId: user.id, notice: event }, 'security notice not sent'));
}

/** The same, waited for: for the CLI, whose process ends after its command. A failure is thrown. */
export async function mailSecurityNotice(
  deps: Pick<MailDeps, 'config' | 'mailer'>,
  user: NoticeRecipient,
  event: SecurityEvent,
  from: NoticeSource,
  options: { detail?: string; to?: string; lang?: Language } = {},
): Promise<void> {
  const notice = securityNotice(deps.config.issuer, user, event, from, options);
  await deps.mailer.send({ ...notice, to: options.to ?? notice.to });
}
