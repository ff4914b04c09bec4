import type { AccessTokenRow } from '../db/access-tokens.js';
import { toIso } from '../time.js';

/** A personal access token as the CLI and pages show it; the token itself only when just made. */
export function presentAccessToken(row: Omit<AccessTokenRow, 'digest'>, token?: string) {
  return {
    id: Number(row.id),
    name: row.name,
    ...(token ? { token } : {}),
    scopes: row.scopes.split(' '),
    createdAt: toIso(row.created_at),
    lastUsedAt: toIso(row.last_used_at),
    expiresAt: toIso(row.expires_at),
  };
}
