import { describeUserAgent } from '../presenters/session.js';
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

const WHAT: Record<AddressAttempt, { subject: string; what: string }> = {
  signup: {
    subject: 'Someone tried to create an account with your address',
    what: 'Someone, maybe you, tried to create a new account on {site} with {email}.',
  },
  'email-change': {
    subject: 'Someone tried to move another account to your address',
    what: 'Someone signed in to another account on {site} asked to change that account’s e-mail address to {email}.',
  },
};

export function addressInUseMail(issuer: string, owner: { username: string; email: string }, attempt: AddressAttempt, from: SeenFrom, at = new Date()): Mail {
  const site = new URL(issuer).host;
  const words = WHAT[attempt];
  return {
    to: owner.email,
    subject: words.subject,
    template: 'address-in-use',
    data: {
      link: `${issuer}/login`,
      resetLink: `${issuer}/forgot-password`,
      username: owner.username,
      site,
      what: words.what.replace('{site}', site).replace('{email}', owner.email),
      when: at.toUTCString().replace('GMT', 'UTC'),
      browser: describeUserAgent(from.userAgent),
      address: from.ip || 'an unknown address',
    },
  };
}
