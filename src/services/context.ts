import type { Knex } from 'knex';

/** Who is acting and from where, for policies and the audit trail. */
export interface Actor {
  userId: number;
  ip: string | null;
  /** The admin CLI: acts on any group, still recorded in the audit trail (with no user). */
  admin?: boolean;
  /**
   * The session's sign-in had a second factor that an upstream provider trusted for two-factor
   * vouched for (`amr` with `fed` and `mfa`): it counts for groups that require two-factor, as
   * the account's own authenticator app does.
   */
  upstreamSecondFactor?: boolean;
  /** Acting through a personal access token: what the token may reach (see `accessGroup`). */
  token?: PersonalTokenLimits;
  /**
   * An application acting as itself (the client credentials grant): no user (`userId` is 0,
   * which no account has); it reaches its own group only (see `accessGroup`).
   */
  application?: ActingApplication;
}

/** An application that acts as itself, and the group it belongs to: the only one it reaches. */
export interface ActingApplication {
  clientId: string;
  groupId: number;
}

/** What limits a personal access token beyond its scopes. */
export interface PersonalTokenLimits {
  tokenId: number;
  /** The only groups the token acts in; undefined, all its user's groups. */
  groups?: ReadonlySet<number>;
  /** Expiry minus creation in milliseconds; null, it never expires. */
  lifetimeMs: number | null;
}

/** What every service needs: the database. Services own their transactions. */
export interface Services {
  db: Knex;
}

/** The user an audit record names: none for the admin CLI. */
export function auditActorId(actor: Actor): number | null {
  return actor.admin || actor.application ? null : actor.userId;
}

/** Who an audit record names: the user, or the application that acted as itself (no user). */
export function auditActor(actor: Actor): { actorId: number | null; actorClientId: string | null } {
  return { actorId: auditActorId(actor), actorClientId: actor.application?.clientId ?? null };
}

/** What an edit changed, for the audit trail: each field whose value differs, `{ field: { from, to } }`. */
export function changedFields<T extends Record<string, unknown>>(before: T, after: T): Record<string, { from: unknown; to: unknown }> {
  const changes: Record<string, { from: unknown; to: unknown }> = {};
  for (const field of Object.keys(after)) {
    if (JSON.stringify(before[field]) !== JSON.stringify(after[field])) changes[field] = { from: before[field], to: after[field] };
  }
  return changes;
}
