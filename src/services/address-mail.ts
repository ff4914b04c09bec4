import { asLanguage, translator } from '../i18n.js';
import { describeUserAgent } from '../presenters/session.js';
import { mailDate } from './security-notices.js';
import type { SeenFrom } from './sessions.js';
import type { Mail } from './mail.js';

/**
 * The mail to the owner of an address someone else tried to use: a sign-up with an address that
 * already has an account, or another account's e-mail change to it. The person who tried is told
 * exactly what they would have been told for a free address; the owner is told the truth (what
 * was tried, when, from which browser and address) and how to sign in, and gets no link that
 * would finish anything.
 */
export type AddressAttempt = 'signup' | 'email-change';

/** Each attempt's words in the `mail` namespace (`mail:addressInUse.<key>`: subject, what). */
const WORDS: Record<AddressAttempt, string> = { signup: 'signup', 'email-change': 'emailChange' };

/** The mail, in the language the owner's account chose, else the page's the attempt came from (`from.lang`), else English. */
export function addressInUseMail(issuer: string, owner: { username: string; email: string; language?: string | null }, attempt: AddressAttempt, from: SeenFrom, at = new Date()): Mail {
  const site = new URL(issuer).host;
  const lang = asLanguage(owner.language) ?? from.lang ?? 'en';
  const t = translator(lang);
  const words = `mail:addressInUse.${WORDS[attempt]}`;
  return {
    to: owner.email,
    subject: t(`${words}.subject`),
    template: 'address-in-use',
    lang,
    data: {
      link: `${issuer}/login`,
      resetLink: `${issuer}/forgot-password`,
      username: owner.username,
      site,
      what: t(`${words}.what`, { site, email: owner.email }),
      when: mailDate(at, lang),
      browser: describeUserAgent(from.userAgent, lang),
      address: from.ip || t('mail:seen.unknownAddress'),
    },
  };
}
