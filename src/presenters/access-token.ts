import type { AccessTokenRow } from '../db/access-tokens.js';
import { toIso } from '../time.js';

/** A personal access token as the CLI and pages show it; the token itself only when just made. */
export function presentAccessToken(row: Omit<AccessTokenRow, 'digest'> & { groups?: Array<{ id: number; name: string; path: string }> }, token?: string) {
  return {
    id: Number(row.id),
    name: row.name,
    ...(token ? { token } : {}),
    scopes: row.scopes.split(' '),
    createdAt: toIso(row.created_at),
    lastUsedAt: toIso(row.last_used_at),
    expiresAt: toIso(row.expires_at),
    /** `all`, or the only groups the token acts in (by id, name and path). */
    groups: row.groups_limited ? (row.groups ?? []).map((g) => ({ id: Number(g.id), name: g.name, path: g.path })) : ('all' as const),
  };
}
