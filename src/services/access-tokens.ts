import type { Knex } from 'knex';
import { z } from 'zod';
import * as tokens from '../db/access-tokens.js';
import { now } from '../time.js';
import { NotFoundError } from '../errors.js';
import { API_SCOPES } from '../vocabulary.js';
import { digest, generateToken } from '../tokens.js';
import * as rules from './rules.js';
import { claimSubmission, completeSubmission, type SubmissionKey } from './submissions.js';

/** The longest lifetime of a personal access token, in days. */
export const MAX_TOKEN_DAYS = 365;

/** Personal access tokens (`ha_`): made by their user, stored as a SHA-256 digest, shown once. */
export const newAccessTokenSchema = z.object({
  name: rules.name,
  scopes: z
    .array(z.enum(API_SCOPES, { error: `scopes must be among ${API_SCOPES.join(', ')}` }), { error: 'scopes is required' })
    .min(1, 'scopes must include at least one scope'),
  expiresInDays: z
    .number({ error: `expiresInDays must be a number of days from 1 to ${MAX_TOKEN_DAYS}, or empty for never` })
    .int('expiresInDays must be a whole number of days')
    .min(1, `expiresInDays must be from 1 to ${MAX_TOKEN_DAYS}`)
    .max(MAX_TOKEN_DAYS, `expiresInDays must be from 1 to ${MAX_TOKEN_DAYS}`)
    .nullable()
    .default(null),
});
export type NewAccessToken = z.input<typeof newAccessTokenSchema>;

export async function createAccessToken(
  db: Knex,
  userId: number,
  input: NewAccessToken,
  submission?: SubmissionKey,
): Promise<{ token: string; row: Omit<tokens.AccessTokenRow, 'digest'> }> {
  const data = rules.parse(newAccessTokenSchema, input);
  const token = generateToken('ha_');
  const at = now();
  const expiresAt = data.expiresInDays ? new Date(Date.now() + data.expiresInDays * 86_400_000).toISOString() : null;
  // With a form's one-time key, a repeated submission creates nothing (RepeatedSubmission).
  const row = await db.transaction(async (trx) => {
    await claimSubmission(trx, submission);
    const inserted = await tokens.insertAccessToken(trx, {
      userId,
      name: data.name,
      digest: digest(token),
      scopes: [...new Set(data.scopes)].join(' '),
      expiresAt,
      at,
    });
    await completeSubmission(trx, submission, inserted.id);
    return inserted;
  });
  return { token, row };
}

/** A user's personal access tokens, newest first, without their digests. */
export function accessTokensOf(db: Knex, userId: number) {
  return tokens.listAccessTokens(db, userId);
}

export async function revokeAccessToken(db: Knex, userId: number, id: number): Promise<void> {
  if ((await tokens.deleteAccessToken(db, userId, id)) === 0) throw new NotFoundError('no such access token');
}
