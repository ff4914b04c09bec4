import type { SignInProviderRow } from '../../db/sign-in-providers.js';
import type { KeyCipher } from '../../key-encryption.js';
import { isSealed } from '../../key-encryption.js';
import type { UpstreamProvider } from './upstream.js';

/** The kind a provider's client secret is sealed as (bound into its encryption, so it cannot be moved to a key's row). */
const SECRET_KIND = 'sign-in-provider-secret';

/** A client secret as stored: sealed with KEYS_SECRET when one is set, as the signing keys are. */
export function sealClientSecret(cipher: KeyCipher | undefined, secret: string): string {
  return cipher ? cipher.seal(SECRET_KIND, secret) : secret;
}

/** Throws KeysSecretError when the secret was sealed under another KEYS_SECRET. */
export function openClientSecret(cipher: KeyCipher | undefined, stored: string): string {
  if (!isSealed(stored)) return stored;
  if (!cipher) throw new Error('a sign-in provider\'s client secret is encrypted, and no KEYS_SECRET is set');
  return cipher.open(SECRET_KIND, stored);
}

const words = (value: string) => value.split(/\s+/).filter(Boolean);

/** A stored provider as the sign-in flow uses it. */
export function openProvider(row: SignInProviderRow, cipher: KeyCipher | undefined): UpstreamProvider {
  let settings: Record<string, string> = {};
  try {
    const parsed: unknown = JSON.parse(row.settings);
    if (parsed && typeof parsed === 'object') settings = parsed as Record<string, string>;
  } catch {
    // Settings are written only by this service; an unreadable value is treated as none.
  }
  return {
    id: row.id,
    slug: row.slug,
    kind: row.kind,
    name: row.name,
    clientId: row.client_id,
    clientSecret: openClientSecret(cipher, row.client_secret),
    scopes: words(row.scopes),
    settings,
    allowSignUp: Boolean(row.allow_sign_up),
    allowedDomains: words(row.allowed_domains.toLowerCase()),
    trustMfa: Boolean(row.trust_mfa),
    disabled: row.disabled_at !== null,
    row,
  };
}
