import type { Knex } from 'knex';
import type Provider from 'oidc-provider';
import { z } from 'zod';
import type { StoreAdapter } from '../../adapters/common.js';
import { deleteAccessToken, findAccessTokensByDigests } from '../db/access-tokens.js';
import { deleteSecret, findAppByClientId, findSecretsByDigests } from '../db/apps.js';
import { recordAudit } from '../db/audit.js';
import { usernameOf } from '../db/users.js';
import { now } from '../time.js';
import { digest, isWellFormedToken } from '../tokens.js';
import { REPORTED_TOKEN_ACTION } from './access-tokens.js';
import { changing } from './change-versions.js';
import { revokeGrants } from './apps.js';
import * as rules from './rules.js';

/** The most credentials one report may carry. */
export const MAX_REPORTED = 1000;

export const credentialReport = z
  .strictObject({
    credentials: z
      .array(z.string({ error: 'credentials must hold strings only' }), { error: 'credentials must be an array of strings' })
      .min(1, 'credentials must hold at least one value')
      .max(MAX_REPORTED, `credentials must hold at most ${MAX_REPORTED} values`)
      .describe(`The values found in public (1 to ${MAX_REPORTED}): \`ho_\` access tokens, \`hr_\` refresh tokens, \`ha_\` personal access tokens, \`hs_\` client secrets. Anything else is ignored.`),
  })
  .meta({ id: 'CredentialReport' });

/** The audit actions of revocations a report made (the group's log; the user's is REPORTED_TOKEN_ACTION). */
export const REPORTED_SECRET_ACTION = 'app.secret.report.revoke';
export const REPORTED_OAUTH_TOKEN_ACTION = 'app.token.report.revoke';

interface Deps {
  db: Knex;
  provider: Provider;
}

/**
 * A report of credentials found in public (a secret scanner's, or anyone's): every live one is
 * revoked and the revocation recorded where its owner reads it. The caller answers the same
 * whatever was sent, so a report tells nothing about what it named.
 *
 * Each value is trimmed of the whitespace around it (a token pasted with its line ending still
 * counts); a value that is then not a well-formed token (its checksum, or a control character
 * inside it) is ignored, never a reason to refuse the report. The well-formed values are looked
 * up with one storage read per kind, however many there are: personal access tokens and client
 * secrets by their digests, OAuth access and refresh tokens in the token storage (findMany).
 * Only what is found is then revoked, each on its own.
 *
 * A personal access token is deleted (as its user's Revoke does) with a row in its user's own
 * log, and a client secret deleted (as an owner's Revoke does) with a row in its group's log,
 * each in one transaction. OAuth tokens live in the token storage (Redis, or oidc-provider's
 * table), which no SQL transaction spans: the token is revoked there first, then its row written
 * in the application's group's log, so a failure in between leaves a revoked token unrecorded,
 * never a recorded live one. An access token is destroyed on its own; a refresh token ends its
 * whole grant, as the revocation endpoint does, since it could have minted access tokens that are
 * as public as it is.
 */
export async function revokeReportedCredentials(deps: Deps, input: unknown, ip: string | null): Promise<void> {
  const { credentials } = rules.parse(credentialReport, input);
  const wellFormed = [...new Set(credentials.map((c) => c.trim()))].filter((c) => isWellFormedToken(c));
  const ofKind = (prefix: string) => wellFormed.filter((value) => value.startsWith(prefix));
  await revokePersonalTokens(deps.db, ofKind('ha_'), ip);
  await revokeClientSecrets(deps.db, ofKind('hs_'), ip);
  await revokeAccessTokens(deps, ofKind('ho_'), ip);
  await revokeClientCredentialsTokens(deps, ofKind('ho_'), ip);
  await revokeRefreshTokens(deps, ofKind('hr_'), ip);
}

async function revokePersonalTokens(db: Knex, values: string[], ip: string | null): Promise<void> {
  for (const row of await findAccessTokensByDigests(db, values.map(digest))) {
    await changing(db, [`pat:${row.id}`], () =>
      db.transaction(async (trx) => {
        if ((await deleteAccessToken(trx, Number(row.user_id), row.id)) !== 1) return;
        const at = now();
        await recordAudit(trx, { groupId: null, userId: Number(row.user_id), actorId: null, action: REPORTED_TOKEN_ACTION, target: row.name, details: { reportedAt: at }, ip }, at);
      }),
    );
  }
}

async function revokeClientSecrets(db: Knex, values: string[], ip: string | null): Promise<void> {
  for (const secret of await findSecretsByDigests(db, values.map(digest))) {
    await changing(db, [`app:${secret.client_id}`], () =>
      db.transaction(async (trx) => {
        const lastFour = await deleteSecret(trx, secret.app_id, secret.id);
        if (lastFour === undefined) return;
        await recordAudit(trx, { groupId: Number(secret.group_id), actorId: null, action: REPORTED_SECRET_ACTION, target: secret.client_id, details: { lastFour }, ip }, now());
      }),
    );
  }
}

/**
 * The values among `values` stored in the token storage of `model`, in one read of the adapter's
 * findMany; each found is then read as the library reads it (find: its expiry, its session's),
 * which only a live token reported costs.
 */
async function storedTokens<T>(model: { adapter: unknown }, find: (value: string) => Promise<T | undefined>, values: string[]): Promise<T[]> {
  if (!values.length) return [];
  const stored = await (model.adapter as StoreAdapter).findMany(values);
  const found = await Promise.all([...stored.keys()].map(find));
  return found.filter((token) => token !== undefined);
}

/** The group log row of an OAuth token revoked by a report: the application's group, naming the user. */
async function recordOAuthRevocation(db: Knex, token: { clientId?: string; accountId?: string }, kind: string, ip: string | null): Promise<void> {
  const app = token.clientId ? await findAppByClientId(db, token.clientId) : undefined;
  if (!app) return;
  const user = token.accountId ? await usernameOf(db, Number(token.accountId)) : undefined;
  // A token the application got for itself has no user to name.
  const whose = token.accountId ? { user: user ?? 'deleted user' } : {};
  await recordAudit(db, { groupId: Number(app.group_id), actorId: null, action: REPORTED_OAUTH_TOKEN_ACTION, target: app.client_id, details: { token: kind, ...whose }, ip }, now());
}

async function revokeAccessTokens(deps: Deps, values: string[], ip: string | null): Promise<void> {
  for (const token of await storedTokens(deps.provider.AccessToken, (value) => deps.provider.AccessToken.find(value), values)) {
    if (token.isExpired) continue;
    await token.destroy();
    await recordOAuthRevocation(deps.db, token, 'access token', ip);
  }
}

/** `ho_` tokens an application got for itself (client credentials): kept apart from access tokens by the library. */
async function revokeClientCredentialsTokens(deps: Deps, values: string[], ip: string | null): Promise<void> {
  for (const token of await storedTokens(deps.provider.ClientCredentials, (value) => deps.provider.ClientCredentials.find(value), values)) {
    if (token.isExpired) continue;
    await token.destroy();
    await recordOAuthRevocation(deps.db, token, 'access token', ip);
  }
}

async function revokeRefreshTokens(deps: Deps, values: string[], ip: string | null): Promise<void> {
  for (const token of await storedTokens(deps.provider.RefreshToken, (value) => deps.provider.RefreshToken.find(value), values)) {
    if (token.isExpired || token.consumed) continue;
    await token.destroy();
    if (token.grantId) await revokeGrants(deps.db, deps.provider, [token.grantId]);
    await recordOAuthRevocation(deps.db, token, 'refresh token and its grant', ip);
  }
}
