import { describeUserAgent } from '../presenters/session.js';
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

interface EventWords {
  subject: string;
  /** What happened, as one sentence; `{detail}` is the event's detail (a name, an address). */
  what: string;
  /** The settings page where the owner sees (and undoes) the change. */
  page: string;
}

const EVENTS: Record<SecurityEvent, EventWords> = {
  'password-changed': { subject: 'Your password was changed', what: 'The password of your account was changed.', page: '/account/settings/password' },
  'password-reset': { subject: 'Your password was reset', what: 'The password of your account was reset through a link sent to this address.', page: '/account/settings/sessions' },
  'email-changed': { subject: 'Your e-mail address was changed', what: 'The e-mail address of your account was changed to {detail}. Messages about the account now go there.', page: '/account/settings/profile' },
  'two-factor-enabled': { subject: 'Two-factor authentication was turned on', what: 'Two-factor authentication with an authenticator app was turned on for your account.', page: '/account/settings/two-factor' },
  'two-factor-disabled': { subject: 'Two-factor authentication was turned off', what: 'Two-factor authentication was turned off for your account: signing in needs only the password now.', page: '/account/settings/two-factor' },
  'two-factor-reset': { subject: 'Two-factor authentication was reset by an administrator', what: 'A site administrator reset two-factor authentication for your account: its authenticator app, recovery codes and passkeys were removed, and signing in needs only the password now. If you did not ask for this, tell your administrator.', page: '/account/settings/two-factor' },
  'recovery-codes-replaced': { subject: 'New recovery codes were made', what: 'New two-factor recovery codes were made for your account; the old ones no longer work.', page: '/account/settings/two-factor' },
  'passkey-added': { subject: 'A passkey was added', what: 'A passkey named "{detail}" was added to your account: it can sign in without your password.', page: '/account/settings/passkeys' },
  'passkey-removed': { subject: 'A passkey was removed', what: 'The passkey named "{detail}" was removed from your account.', page: '/account/settings/passkeys' },
  'personal-token-created': { subject: 'A personal access token was created', what: 'A personal access token named "{detail}" was created for your account: it can call the API as you.', page: '/account/settings/tokens' },
  'password-set': { subject: 'A password was set', what: 'A password was set for your account, which had none: it can now be signed in to with your username or address and that password.', page: '/account/settings/sign-in-methods' },
  'sign-in-method-linked': { subject: 'A sign-in method was linked', what: 'Your account can now be signed in to with {detail}.', page: '/account/settings/sign-in-methods' },
  'sign-in-method-unlinked': { subject: 'A sign-in method was unlinked', what: '{detail} no longer signs in to your account.', page: '/account/settings/sign-in-methods' },
};

/** A change made with the admin CLI on the server: no browser, no client address. */
export const COMMAND_LINE = 'command-line';

/** Where a change came from: a request's address and user agent, or the command line. */
export type NoticeSource = SeenFrom | typeof COMMAND_LINE;

export interface NoticeRecipient {
  id: number;
  username: string;
  email: string;
}

/** The words and values of one notice (exported for the tests of its wording). */
export function securityNotice(issuer: string, user: NoticeRecipient, event: SecurityEvent, from: NoticeSource, options: { detail?: string; at?: Date } = {}) {
  const words = EVENTS[event];
  const at = options.at ?? new Date();
  return {
    to: user.email,
    subject: words.subject,
    template: 'security-notice' as const,
    data: {
      link: `${issuer}${words.page}`,
      username: user.username,
      what: words.what.replace('{detail}', options.detail ?? ''),
      // UTC, written out: the mail is read anywhere, and a bare ISO string is hard on people.
      when: `${at.toUTCString().replace('GMT', 'UTC')}`,
      browser: from === COMMAND_LINE ? 'none: the command line on the server (idp)' : describeUserAgent(from.userAgent),
      address: from === COMMAND_LINE ? 'the server itself' : from.ip || 'an unknown address',
      resetLink: `${issuer}/forgot-password`,
      sessionsLink: `${issuer}/account/settings/sessions`,
    },
  };
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
  options: { detail?: string; to?: string } = {},
): void {
  mailSecurityNotice(deps, user, event, from, options).catch((err: unknown) => deps.log.error({ err, userId: user.id, notice: event }, 'security notice not sent'));
}

/** The same, waited for: for the CLI, whose process ends after its command. A failure is thrown. */
export async function mailSecurityNotice(
  deps: Pick<MailDeps, 'config' | 'mailer'>,
  user: NoticeRecipient,
  event: SecurityEvent,
  from: NoticeSource,
  options: { detail?: string; to?: string } = {},
): Promise<void> {
  const notice = securityNotice(deps.config.issuer, user, event, from, options);
  await deps.mailer.send({ ...notice, to: options.to ?? notice.to });
}
