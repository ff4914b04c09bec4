import type { SignInProviderRow } from '../../db/sign-in-providers.js';
import { secretsOfKind, type KeyCipher } from '../../key-encryption.js';
import type { UpstreamProvider } from './upstream.js';

/** A provider's client secret at rest (its kind is bound into its encryption, so it cannot be moved to a key's row). */
const clientSecrets = secretsOfKind('sign-in-provider-secret', "a sign-in provider's client secret");
export const sealClientSecret = clientSecrets.seal;
export const openClientSecret = clientSecrets.open;

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
