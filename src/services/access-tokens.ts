import type { Knex } from 'knex';
import { z } from 'zod';
import * as tokens from '../db/access-tokens.js';
import { now } from '../time.js';
import { capOfGroup, DAY_MS, exceedsCap } from '../policies/token-lifetime.js';
import { NotFoundError, ValidationError } from '../errors.js';
import { listUserAudit } from '../db/audit.js';
import { MAX_ID } from '../ids.js';
import { ADMIN_SCOPE, PERSONAL_TOKEN_SCOPE_LIST } from '../vocabulary.js';
import { findUserById } from '../db/users.js';
import { isSiteAdmin } from '../policies/site.js';
import { digest, generateToken } from '../tokens.js';
import { changing } from './change-versions.js';
import * as rules from './rules.js';
import { claimSubmission, completeSubmission, type SubmissionKey } from './submissions.js';

/** The longest lifetime of a personal access token, in days. */
export const MAX_TOKEN_DAYS = 365;

/** The most groups one token may be limited to. */
export const MAX_TOKEN_GROUPS = 200;

/** Personal access tokens (`ha_`): made by their user, stored as a SHA-256 digest, shown once. */
export const newAccessTokenSchema = z.object({
  name: rules.name,
  scopes: z
    .array(z.enum(PERSONAL_TOKEN_SCOPE_LIST, { error: `scopes must be among ${PERSONAL_TOKEN_SCOPE_LIST.join(', ')}` }), { error: 'scopes is required' })
    .min(1, 'scopes must include at least one scope'),
  expiresInDays: z
    .number({ error: `expiresInDays must be a number of days from 1 to ${MAX_TOKEN_DAYS}, or empty for never` })
    .int('expiresInDays must be a whole number of days')
    .min(1, `expiresInDays must be from 1 to ${MAX_TOKEN_DAYS}`)
    .max(MAX_TOKEN_DAYS, `expiresInDays must be from 1 to ${MAX_TOKEN_DAYS}`)
    .nullable()
    .default(null),
  groups: z
    .union([
      z.literal('all'),
      z
        .array(z.int().min(1).max(MAX_ID), { error: 'groups must be "all" or a list of group ids' })
        .min(1, 'groups must name at least one group')
        .max(MAX_TOKEN_GROUPS, `groups may name at most ${MAX_TOKEN_GROUPS} groups`),
    ], { error: 'groups must be "all" or a list of group ids' })
    .default('all'),
});
export type NewAccessToken = z.input<typeof newAccessTokenSchema>;

/** The refusal of the `admin` scope to anyone but a site administrator. */
export const ADMIN_SCOPE_REFUSED = 'scopes may include admin only for a site administrator';

export async function createAccessToken(
  db: Knex,
  userId: number,
  input: NewAccessToken,
  submission?: SubmissionKey,
): Promise<{ token: string; row: Omit<tokens.AccessTokenRow, 'digest'> & { groups?: tokens.TokenGroup[] } }> {
  const data = rules.parse(newAccessTokenSchema, input);
  const groupIds = data.groups === 'all' ? undefined : [...new Set(data.groups)];
  const token = generateToken('ha_');
  const at = now();
  // From the same instant as the creation: the lifetime a group's cap is compared with is exact.
  const expiresAt = data.expiresInDays ? new Date(Date.parse(at) + data.expiresInDays * DAY_MS).toISOString() : null;
  // With a form's one-time key, a repeated submission creates nothing (RepeatedSubmission).
  const row = await db.transaction(async (trx) => {
    // Read in the transaction that writes the token: an administrator demoted meanwhile is refused.
    if (data.scopes.includes(ADMIN_SCOPE) && !isSiteAdmin(await findUserById(trx, userId))) {
      throw new ValidationError('scopes', ADMIN_SCOPE_REFUSED);
    }
    // Checked in the transaction that writes the token's groups, with the memberships locked: a
    // group deleted meanwhile is refused here, never a foreign-key failure at the insert.
    if (groupIds) {
      const mine = new Set(await tokens.groupIdsOfMember(trx, userId, groupIds));
      const others = groupIds.filter((id) => !mine.has(id));
      if (others.length) throw new ValidationError('groups', `groups must be groups you are a member of; you are not in ${others.join(', ')}`);
      // A group chosen by name that would refuse the token at once (its cap is shorter) is said now, not at its first use.
      const lifetime = data.expiresInDays ? data.expiresInDays * DAY_MS : null;
      const capping = (await tokens.lifetimeCapsOf(trx, groupIds)).filter((group) => exceedsCap(lifetime, group.days));
      if (capping.length) {
        throw new ValidationError('expiresInDays', `expiresInDays must be within the chosen groups' limits: ${capping.map((g) => capOfGroup(g.name, g.days)).join(', ')}`);
      }
    }
    await claimSubmission(trx, submission);
    const inserted = await tokens.insertAccessToken(trx, {
      userId,
      name: data.name,
      digest: digest(token),
      scopes: [...new Set(data.scopes)].join(' '),
      expiresAt,
      at,
      groupIds,
    });
    await completeSubmission(trx, submission, inserted.id);
    return inserted;
  });
  const groups = groupIds ? ((await tokens.groupsOfTokens(db, [row.id])).get(Number(row.id)) ?? []) : undefined;
  return { token, row: { ...row, groups } };
}

/** A user's personal access tokens, newest first, without their digests, each with the groups it is limited to. */
export async function accessTokensOf(db: Knex, userId: number) {
  const rows = await tokens.listAccessTokens(db, userId);
  const groups = await tokens.groupsOfTokens(db, rows.filter((r) => r.groups_limited).map((r) => r.id));
  return rows.map((row) => ({ ...row, groups: row.groups_limited ? (groups.get(Number(row.id)) ?? []) : undefined }));
}

/** The audit action of a personal access token revoked because it was reported public. */
export const REPORTED_TOKEN_ACTION = 'token.report.revoke';

/** The user's personal access tokens revoked because they were reported public, newest first. */
export async function reportedTokensOf(db: Knex, userId: number): Promise<Array<{ name: string; revokedAt: string }>> {
  const rows = await listUserAudit(db, userId, [REPORTED_TOKEN_ACTION]);
  return rows.map((row) => ({ name: row.target, revokedAt: new Date(row.created_at).toISOString() }));
}

/** Deletes the token; an instance that cached it (change-versions.ts) refuses it from the next request. */
export async function revokeAccessToken(db: Knex, userId: number, id: number): Promise<void> {
  const deleted = await changing(db, [`pat:${id}`], () => tokens.deleteAccessToken(db, userId, id));
  if (deleted === 0) throw new NotFoundError('no such access token');
}
