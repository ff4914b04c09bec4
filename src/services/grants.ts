import type { Knex } from 'knex';
import type Provider from 'oidc-provider';
import { deleteUserGrant, findUserGrant } from '../db/grants.js';
import { NotFoundError } from '../errors.js';

/**
 * Withdraws what a user granted an application (Account settings → Authorized applications):
 * every code, access token and refresh token of the grant, the grant itself (so the next flow
 * asks for consent again), then the user_grants row that listed it.
 *
 * Storage first, the row last: if storage fails half-way the application is still listed and
 * the user can simply press Revoke again; never the other way round (a hidden, live grant).
 */
export async function revokeUserGrant(db: Knex, provider: Provider, userId: number, clientId: string): Promise<void> {
  const row = await findUserGrant(db, userId, clientId);
  if (!row) throw new NotFoundError('no such authorized application');
  await revokeGrant(provider, row.grant_id);
  await deleteUserGrant(db, userId, clientId, row.grant_id);
}

/** Removes a grant and every code, access token and refresh token issued under it. */
export async function revokeGrant(provider: Provider, grantId: string): Promise<void> {
  // One call is enough: both adapters (adapters/sql.ts, adapters/redis.ts) remove every grantable
  // model of the grant (codes, access and refresh tokens) whichever model's adapter is asked.
  await provider.AccessToken.revokeByGrantId(grantId);
  const grant = await provider.Grant.find(grantId);
  await grant?.destroy();
}
