import { errors, type Adapter, type AdapterPayload } from 'oidc-provider';

/**
 * What the SQL and Redis adapters share. Both key every entry by `digest(id)` and never store
 * `jti` (it equals the id), so a copy of the storage holds no token anyone could present.
 */

/**
 * oidc-provider's adapter, and one more method: removing a session by its uid, which is all that
 * Account settings → Sessions knows of a session other than the browser's own.
 */
export interface StoreAdapter extends Adapter {
  destroyByUid(uid: string): Promise<void>;
}

/** The models whose entries revokeByGrantId removes (as oidc-provider's memory adapter does). */
export const GRANTABLE = new Set([
  'AccessToken',
  'AuthorizationCode',
  'RefreshToken',
  'DeviceCode',
  'BackchannelAuthenticationRequest',
  'PreAuthorizedCode',
]);

/** Clients are the application's oauth_apps, served by the provider's own client lookup. */
export function assertStoredModel(model: string): void {
  if (model === 'Client') {
    throw new Error('oidc-provider Client is not kept by the storage adapters: clients are loaded from oauth_apps');
  }
}

export function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

export function toStored(payload: AdapterPayload): string {
  const { jti: _id, ...rest } = payload;
  // An Interaction copies its session's id (the session cookie's value) as session.cookie;
  // nothing in oidc-provider or here reads it back, so it is not kept either.
  const session = rest.session as Record<string, unknown> | undefined;
  if (session && typeof session === 'object' && 'cookie' in session) {
    const { cookie: _cookie, ...kept } = session;
    rest.session = kept as AdapterPayload['session'];
  }
  return JSON.stringify(rest);
}

/**
 * The payload an entry stands for. `jti` is restored only when the caller looked the entry up by
 * its id. findByUid and findByUserCode have no id to give back, which is fine: Session.findByUid
 * is only read (accountId and grant checks of an interaction or a session-bound token), never
 * saved, and the device flow, the only caller of findByUserCode, is disabled.
 */
export function fromStored(stored: string, consumed: string | number | null | undefined, id?: string): AdapterPayload {
  const payload = JSON.parse(stored) as AdapterPayload;
  if (consumed !== null && consumed !== undefined) payload.consumed = Number(consumed);
  if (id !== undefined) payload.jti = id;
  return payload;
}

/** What an entry must also be found by: a grant (grantable models only), a session uid, a user code. */
export function indexesOf(model: string, payload: AdapterPayload): { grantId?: string; uid?: string; userCode?: string } {
  return {
    ...(GRANTABLE.has(model) && payload.grantId ? { grantId: payload.grantId } : {}),
    ...(model === 'Session' && payload.uid ? { uid: payload.uid } : {}),
    ...(payload.userCode ? { userCode: payload.userCode } : {}),
  };
}

/**
 * What a losing `consume` throws. oidc-provider checks `consumed` on the entry it found and then
 * calls `consume`; two parallel redemptions both pass that check, so the adapter's write is the
 * compare-and-set that decides: the first wins, every other caller gets the protocol's own
 * `invalid_grant`. The winner's tokens stay valid; a later, sequential reuse still meets the
 * library's reuse detection (the entry is marked consumed), which revokes the whole grant.
 */
export function alreadyConsumed(model: string): Error {
  const what = model === 'RefreshToken' ? 'refresh token' : model === 'AuthorizationCode' ? 'authorization code' : 'grant';
  return new errors.InvalidGrant(`${what} already used`);
}
