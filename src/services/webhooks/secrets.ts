import { isSealed, type KeyCipher } from '../../key-encryption.js';

/** The kind a webhook secret is sealed as (bound into its encryption, so it cannot be moved to another kind's row). */
const SECRET_KIND = 'webhook-secret';

/** A webhook secret as stored: sealed with KEYS_SECRET when one is set, as the signing keys are. */
export function sealWebhookSecret(cipher: KeyCipher | undefined, secret: string): string {
  return cipher ? cipher.seal(SECRET_KIND, secret) : secret;
}

/** Throws when the secret was sealed and no KEYS_SECRET (or another one) is set. */
export function openWebhookSecret(cipher: KeyCipher | undefined, stored: string): string {
  if (!isSealed(stored)) return stored;
  if (!cipher) throw new Error('a webhook secret is encrypted, and no KEYS_SECRET is set');
  return cipher.open(SECRET_KIND, stored);
}
