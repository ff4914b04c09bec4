import type { Knex } from 'knex';
import type Provider from 'oidc-provider';
import { deleteUserGrant, findUserGrant, insertUserGrant, listUserGrants, updateUserGrant } from '../db/grants.js';
import { now } from '../time.js';
import { NotFoundError } from '../errors.js';

/**
 * Withdraws what a user granted an application (Account settings → Authorized applications):
 * every code, access token and refresh token of the grant, the grant itself (so the next flow
 * asks for consent again), then the user_grants row that listed it.
 *
 * Storage first, the row last: if storage fails half-way the application is still listed and
 * the user can simply press Revoke again; never the other way round (a hidden, live grant).
 */
/** The applications a user has authorized (Account settings → Authorized applications). */
export function authorizedApplicationsOf(db: Knex, userId: number) {
  return listUserGrants(db, userId);
}

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

/**
 * The scopes Authorized applications lists for a grant: the service's own, then each resource's
 * (RFC 8707), so a grant for a resource alone is not listed with none.
 */
function listedScopes(grant: InstanceType<Provider['Grant']>): string {
  const resources = Object.keys(grant.resources ?? {}).map((indicator) => grant.getResourceScope(indicator));
  return [...new Set([grant.getOIDCScope(), ...resources].join(' ').split(' ').filter(Boolean))].join(' ');
}

/** What a consent adds to the user's grant for an application. */
export interface Consent {
  accountId: string;
  clientId: string;
  /** The grant oidc-provider found for this flow (the session's, or the user's listed one). */
  flowGrantId?: string;
  scopes?: string[];
  claims?: string[];
  /** The scopes of each resource (RFC 8707) the person consented to, by resource identifier. */
  resourceScopes?: Record<string, string[]>;
}

/**
 * Records a consent in the one grant a user has for an application, and returns its id.
 *
 * Two flows may reach the consent page at once (two browsers, two tabs). Each would otherwise
 * save a grant of its own and the listing would keep only the last, leaving the other's tokens
 * live but invisible to **Revoke**. Instead the listed grant is extended when there is one, and a
 * new grant is listed only if no other consent listed one first; the loser adds its scopes to the
 * winner's grant and drops its own, so every flow ends on the same grant.
 */
export async function consentToGrant(db: Knex, provider: Provider, consent: Consent): Promise<string> {
  const { accountId, clientId } = consent;
  const userId = Number(accountId);
  const belongs = (grant: InstanceType<Provider['Grant']> | undefined) =>
    grant && !grant.isExpired && grant.accountId === accountId && grant.clientId === clientId ? grant : undefined;
  const extend = async (grant: InstanceType<Provider['Grant']>) => {
    if (consent.scopes?.length) grant.addOIDCScope(consent.scopes.join(' '));
    if (consent.claims?.length) grant.addOIDCClaims(consent.claims);
    for (const [indicator, scopes] of Object.entries(consent.resourceScopes ?? {})) {
      if (scopes.length) grant.addResourceScope(indicator, scopes.join(' '));
    }
    return grant.save();
  };

  // A flow that found no grant when it was authorized (none listed for the user then) most likely
  // finds none listed now: list a new one at once, and read the listing only when another consent
  // listed one first (this grant, which never issued a thing, then goes).
  if (!consent.flowGrantId) {
    const grant = new provider.Grant({ accountId, clientId });
    const grantId = await extend(grant);
    if (await insertUserGrant(db, { userId, clientId, grantId, scopes: listedScopes(grant), at: now() })) return grantId;
    await grant.destroy();
  }
  // Bounded: each retry means another consent or a revoke changed the row in between.
  for (let attempt = 0; attempt < 3; attempt += 1) {
    const row = await findUserGrant(db, userId, clientId);
    const listed = row ? belongs(await provider.Grant.find(row.grant_id)) : undefined;
    if (row && listed) {
      const grantId = await extend(listed);
      // False when a Revoke removed the listing meanwhile: go round and list it again.
      if (await updateUserGrant(db, { userId, clientId, expected: row.grant_id, grantId, scopes: listedScopes(listed), at: now() })) {
        return grantId;
      }
      continue;
    }
    // No live listed grant: start from the flow's own (if it is this user's) or a new one.
    const fromFlow = consent.flowGrantId ? belongs(await provider.Grant.find(consent.flowGrantId)) : undefined;
    const grant = fromFlow ?? new provider.Grant({ accountId, clientId });
    const grantId = await extend(grant);
    const scopes = listedScopes(grant);
    const listedNow = row
      ? await updateUserGrant(db, { userId, clientId, expected: row.grant_id, grantId, scopes, at: now() })
      : await insertUserGrant(db, { userId, clientId, grantId, scopes, at: now() });
    if (listedNow) return grantId;
    // Another consent listed its grant first: drop ours (never issued a thing) and join theirs.
    if (!fromFlow) await grant.destroy();
  }
  throw new Error('the consent could not be recorded: the authorized application kept changing');
}
