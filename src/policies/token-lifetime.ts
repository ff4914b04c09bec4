import { z } from 'zod';

/**
 * Groups' caps on the lifetime of personal access tokens. A token's lifetime is its expiry minus
 * its creation (no expiry: infinite); a group whose cap it exceeds refuses it on its routes and
 * leaves itself out of the token's list of groups, while the token works everywhere else.
 */

/** The largest cap a group may set, in days (personal access tokens live at most a year). */
export const MAX_POLICY_DAYS = 365;
export const DAY_MS = 86_400_000;
/** A token made with "30 days" is not refused by a 30-day cap over the milliseconds between its two timestamps. */
const SLACK_MS = 60_000;

export const POLICY_FIELD = 'personalTokenMaxLifetimeDays';

export const maxLifetimeDays = z
  .number({ error: `${POLICY_FIELD} must be a whole number of days from 1 to ${MAX_POLICY_DAYS}, or null for no limit` })
  .int(`${POLICY_FIELD} must be a whole number of days from 1 to ${MAX_POLICY_DAYS}, or null for no limit`)
  .min(1, `${POLICY_FIELD} must be from 1 to ${MAX_POLICY_DAYS} days, or null for no limit`)
  .max(MAX_POLICY_DAYS, `${POLICY_FIELD} must be from 1 to ${MAX_POLICY_DAYS} days, or null for no limit`)
  .nullable()
  .describe('The longest lifetime (expiry minus creation) of a personal access token that may act in this group, in days; null: no limit. A token without expiry exceeds any limit. A token past it is refused on the group\'s routes (403 `token_lifetime_exceeds_group_policy`) and left out of its `GET /groups` list.');

/** A token's lifetime in milliseconds; null for a token that never expires. */
export function lifetimeMs(createdAt: string | Date, expiresAt: string | Date | null): number | null {
  return expiresAt === null ? null : new Date(expiresAt).getTime() - new Date(createdAt).getTime();
}

/** Whether a token of this lifetime exceeds a group's cap (null: none). */
export function exceedsCap(lifetime: number | null, capDays: number | null | undefined): boolean {
  if (capDays === null || capDays === undefined) return false;
  return lifetime === null || lifetime > capDays * DAY_MS + SLACK_MS;
}

/**
 * The lifetime a group's cap is compared with in SQL (`cap * DAY_MS >= this`): the slack taken
 * off, and a never-expiring token as a lifetime no cap reaches.
 */
export function comparableLifetimeMs(lifetime: number | null): number {
  return lifetime === null ? (MAX_POLICY_DAYS + 1) * DAY_MS * 1000 : Math.max(0, lifetime - SLACK_MS);
}

/** A cap in words, for the pages and the audit log. */
export function capInWords(days: number | null): string {
  return days === null ? 'no limit' : `${days} day${days === 1 ? '' : 's'}`;
}

/** A group's cap said of the group, as the token form names the groups that refuse its expiration. */
export function capOfGroup(name: string, days: number): string {
  return `${name} limits tokens to ${capInWords(days)}`;
}

/** A lifetime in words, for the refusal. */
export function lifetimeInWords(lifetime: number | null): string {
  if (lifetime === null) return 'never expires';
  const days = Math.round(lifetime / DAY_MS);
  return `lives ${days} day${days === 1 ? '' : 's'}`;
}
