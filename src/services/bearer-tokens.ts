import type { Knex } from 'knex';
import type Provider from 'oidc-provider';
import { findBearerTokenByDigest, groupIdsOfToken, touchAccessToken } from '../db/access-tokens.js';
import { groupOfActingApplication, oauthPartiesActive } from '../db/apps.js';
import { touchUserGrant } from '../db/grants.js';
import { lastUseRecorder } from '../last-use.js';
import { now } from '../time.js';
import { changeVersionsOf, type Subject } from './change-versions.js';
import type { ActingApplication, PersonalTokenLimits } from './context.js';
import { lifetimeMs } from '../policies/token-lifetime.js';

/** Who a bearer token acts as: the same shape for OAuth (`ho_`) and personal (`ha_`) tokens. */
export interface TokenOwner {
  userId: number;
  scopes: Set<string>;
  kind: 'oauth' | 'personal';
  clientId?: string;
  /**
   * An OAuth token an application got for itself (client credentials grant): it has no user
   * (`userId` 0) and reaches its application's group only.
   */
  application?: ActingApplication;
  /** A personal token's group restriction and lifetime, which groups' policies are checked against. */
  personal?: PersonalTokenLimits;
  /** An OAuth token bound to a DPoP key (RFC 9449): the key's JWK SHA-256 thumbprint, its `cnf.jkt`. */
  jkt?: string;
}

/**
 * The lookups behind the API's bearer authentication. `ho_` tokens are found through
 * oidc-provider's own AccessToken model, so expiry, revocation and grant revocation count exactly
 * as the authorization server sees them; `ha_` tokens by digest in their table. Each records its
 * last use (an application's grant, or the personal token) at most once a minute. A disabled
 * account's tokens are refused whatever their state.
 */
export function bearerTokens(deps: { db: Knex; provider: Provider }) {
  const recordUse = lastUseRecorder();
  const partiesActive = changeVersionsOf(deps.db)?.cache((key) => {
    const [clientId, userId] = key.split('\n') as [string, string];
    return oauthPartiesActive(deps.db, clientId, Number(userId));
  });

  const personalTokens = personalTokenLookup(deps.db);
  // With Redis, an application's group (or its absence) is kept under the application's version.
  const actingGroup = changeVersionsOf(deps.db)?.cache((clientId) => groupOfActingApplication(deps.db, clientId));
  const groupOfApplication = (clientId: string) =>
    actingGroup ? actingGroup.get(clientId, [`app:${clientId}`]) : groupOfActingApplication(deps.db, clientId);

  return {
    async oauth(value: string): Promise<TokenOwner | undefined> {
      const token = await deps.provider.AccessToken.find(value);
      if (!token) return this.application(value);
      // find() allows oidc-provider's clockTolerance (15 s) past `exp`, a slack meant for other
      // parties' clocks; the token is ours, so it ends at exactly 3600 s on every storage (SQL
      // already drops it then, Redis would keep it 15 s longer).
      if (!token || !token.accountId || !token.clientId || token.isExpired) return undefined;
      // A token bound to a resource (RFC 8707: its `aud`) is that resource's, not the API's.
      if (token.aud !== undefined) return undefined;
      const grantId = token.grantId;
      if (grantId) recordUse(`grant:${grantId}`, () => touchUserGrant(deps.db, grantId, now()));
      return { userId: Number(token.accountId), scopes: token.scopes, kind: 'oauth', clientId: token.clientId, ...(token.jkt ? { jkt: token.jkt } : {}) };
    },

    /**
     * An `ho_` token of the client credentials grant (the library's ClientCredentials model, kept
     * apart from access tokens): the application acting as itself. Its group is the one it is in
     * now; one that no longer allows the grant, or is gone, has a token that no longer works.
     */
    async application(value: string): Promise<TokenOwner | undefined> {
      const token = await deps.provider.ClientCredentials.find(value);
      if (!token || !token.clientId || token.isExpired || token.aud !== undefined) return undefined;
      const groupId = await groupOfApplication(token.clientId);
      if (groupId === undefined) return undefined;
      const scopes = new Set(String(token.scope ?? '').split(' ').filter(Boolean));
      return {
        userId: 0, scopes, kind: 'oauth', clientId: token.clientId,
        application: { clientId: token.clientId, groupId },
        ...(token.jkt ? { jkt: token.jkt } : {}),
      };
    },

    async personal(tokenDigest: string): Promise<TokenOwner | undefined> {
      const found = await personalTokens.find(tokenDigest);
      if (!found || found.disabled) return undefined;
      if (found.expiresAtMs !== undefined && found.expiresAtMs <= Date.now()) return undefined;
      const { owner } = found;
      const tokenId = owner.personal!.tokenId;
      recordUse(tokenId, () => touchAccessToken(deps.db, tokenId, now()));
      return owner;
    },

    /**
     * Whether an OAuth token's application still exists and its user is not disabled (a personal
     * token's lookup already says the latter). Deleting an application revokes its grants, but a
     * token issued in the same instant, or under a grant the listing lost, would outlive it. With
     * Redis the answer is cached per application and user, and used while both versions are
     * unchanged (see `change-versions.ts`): two GETs in the same write as the rate limit's counter.
     */
    oauthPartiesActive(owner: TokenOwner): Promise<boolean> {
      const { clientId, userId } = owner;
      // An application acting as itself was checked by application() just now.
      if (clientId === undefined || owner.application) return Promise.resolve(true);
      return partiesActive
        ? partiesActive.get(`${clientId}\n${userId}`, [`app:${clientId}`, `user:${userId}`])
        : oauthPartiesActive(deps.db, clientId, userId);
    },
  };
}

/** A personal token as the bearer check reads it: who it acts as, and what ends it. */
interface PersonalToken {
  owner: TokenOwner;
  /** Its user is disabled. */
  disabled: boolean;
  expiresAtMs: number | undefined;
}

async function loadPersonalToken(db: Knex, tokenDigest: string): Promise<PersonalToken | undefined> {
  const row = await findBearerTokenByDigest(db, tokenDigest);
  if (!row) return undefined;
  // Only a token limited to some groups costs a second query.
  const groups = row.groups_limited ? new Set(await groupIdsOfToken(db, row.id)) : undefined;
  return {
    owner: {
      userId: Number(row.user_id),
      scopes: new Set(row.scopes.split(' ')),
      kind: 'personal',
      personal: { tokenId: Number(row.id), groups, lifetimeMs: lifetimeMs(row.created_at, row.expires_at) },
    },
    disabled: Boolean(row.disabled_at),
    expiresAtMs: row.expires_at ? new Date(row.expires_at).getTime() : undefined,
  };
}

/**
 * Personal tokens by digest. With Redis, a token is kept beside the versions of itself and of its
 * user (see `change-versions.ts`): revoking it (its user, or a leak report) replaces the first;
 * disabling, enabling or deleting the user the second. A digest's token and user never change
 * (a token is never edited, only deleted), so which versions guard a digest is learnt from its
 * first lookup; that lookup is made again under the versions just read, so a revocation between
 * the two is never cached. Digests that find nothing are not remembered.
 */
function personalTokenLookup(db: Knex): { find(tokenDigest: string): Promise<PersonalToken | undefined> } {
  const versions = changeVersionsOf(db);
  if (!versions) return { find: (tokenDigest) => loadPersonalToken(db, tokenDigest) };
  const cache = versions.cache((tokenDigest) => loadPersonalToken(db, tokenDigest));
  const guards = new Map<string, readonly Subject[]>();
  return {
    async find(tokenDigest) {
      let subjects = guards.get(tokenDigest);
      if (!subjects) {
        const first = await loadPersonalToken(db, tokenDigest);
        if (!first) return undefined;
        subjects = [`pat:${first.owner.personal!.tokenId}`, `user:${first.owner.userId}`];
        if (guards.size >= MAX_GUARDED_DIGESTS) guards.clear();
        guards.set(tokenDigest, subjects);
      }
      return cache.get(tokenDigest, subjects);
    },
  };
}

const MAX_GUARDED_DIGESTS = 10_000;
