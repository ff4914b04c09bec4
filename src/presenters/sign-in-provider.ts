import type { SignInProviderRow } from '../db/sign-in-providers.js';
import { toIso } from '../time.js';

/**
 * A sign-in provider as the Admin pages and `idp provider list --json` show it. The client
 * secret is never part of it, not even masked: it is shown nowhere once saved.
 */
export interface SignInProviderView {
  id: number;
  slug: string;
  kind: string;
  name: string;
  clientId: string;
  scopes: string[];
  settings: Record<string, string>;
  allowSignUp: boolean;
  allowedDomains: string[];
  trustMfa: boolean;
  position: number;
  disabled: boolean;
  disabledAt: string | null;
  /** Identities linked through the provider. */
  identities: number;
  createdAt: string;
  updatedAt: string;
}

const words = (value: string) => value.split(/\s+/).filter(Boolean);

function settingsOf(row: SignInProviderRow): Record<string, string> {
  try {
    const parsed: unknown = JSON.parse(row.settings);
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return {};
    return Object.fromEntries(Object.entries(parsed).filter((entry): entry is [string, string] => typeof entry[1] === 'string'));
  } catch {
    return {};
  }
}

export function presentSignInProvider(row: SignInProviderRow, identities: number): SignInProviderView {
  return {
    id: Number(row.id),
    slug: row.slug,
    kind: row.kind,
    name: row.name,
    clientId: row.client_id,
    scopes: words(row.scopes),
    settings: settingsOf(row),
    allowSignUp: Boolean(row.allow_sign_up),
    allowedDomains: words(row.allowed_domains),
    trustMfa: Boolean(row.trust_mfa),
    position: Number(row.position),
    disabled: row.disabled_at !== null,
    disabledAt: toIso(row.disabled_at),
    identities,
    createdAt: toIso(row.created_at) ?? '',
    updatedAt: toIso(row.updated_at) ?? '',
  };
}
