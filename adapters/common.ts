import { errors, type Adapter, type AdapterPayload } from 'oidc-provider';

/**
 * What the SQL and Redis adapters share. Both key every entry by `digest(id)` and never store
 * `jti` (it equals the id), so a copy of the storage holds no token anyone could present; the one
 * exception is a device code (see DEVICE_CODE).
 */

/**
 * A DeviceCode is found by the user code the person types (findByUserCode) and then saved again
 * with the person's approval under its own id: without that id, the save would make a new entry
 * the device never polls. So a device code keeps its id in its entry, for its short life
 * (DEVICE_CODE_TTL_S, ten minutes by default) and until redeemed once.
 */
const DEVICE_CODE = 'DeviceCode';

/** How long a device code's entry outlives its expiry, so the library can still say `expired_token`. */
const DEVICE_CODE_KEPT_AFTER_EXPIRY_S = 600;

/**
 * oidc-provider's adapter, and two more methods: removing a session by its uid, which is all that
 * Account settings → Sessions knows of a session other than the browser's own; and finding many
 * entries at once.
 */
export interface StoreAdapter extends Adapter {
  destroyByUid(uid: string): Promise<void>;
  /**
   * The entries of `ids` that are stored (each with jti restored), in one storage read however
   * many ids are asked for: a leaked-credential report names up to a thousand tokens.
   */
  findMany(ids: readonly string[]): Promise<Map<string, AdapterPayload>>;
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

/**
 * How long an entry is kept: its lifetime, except a DeviceCode's, kept DEVICE_CODE_KEPT_AFTER_EXPIRY_S longer. The
 * library checks a device code's expiry itself: a device polling with an expired code is told
 * `expired_token`, and a person entering its user code that it expired, only while the entry is
 * still there to find.
 */
export function keptFor(model: string, expiresIn: number | undefined): number | undefined {
  if (typeof expiresIn !== 'number') return undefined;
  return model === DEVICE_CODE ? expiresIn + DEVICE_CODE_KEPT_AFTER_EXPIRY_S : expiresIn;
}

export function toStored(payload: AdapterPayload, model?: string): string {
  const { jti, ...rest } = payload;
  if (model === DEVICE_CODE && jti) (rest as AdapterPayload).jti = jti;
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
 * The payload an entry stands for. `jti` is restored when the caller looked the entry up by its
 * id; findByUid has no id to give back, which is fine: Session.findByUid is only read (accountId
 * and grant checks of an interaction or a session-bound token), never saved. findByUserCode finds
 * a DeviceCode, which kept its id (KEEPS_ITS_ID).
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
