/**
 * Whether an account keeps a way to sign in after losing one of its sign-in methods. Pure: the
 * service loads the facts (with the account's row locked) and asks here.
 */
export interface WaysIn {
  /** The account has a password (not the stored hash of an account without one). */
  password: boolean;
  passkeys: number;
  /** Its linked identities, and whether each one's provider is enabled (a disabled one signs nobody in). */
  identities: { id: number; enabled: boolean }[];
}

/** Whether removing one passkey leaves the account a password, another passkey or an identity of an enabled provider. */
export function mayRemovePasskey(ways: WaysIn): boolean {
  return ways.password || ways.passkeys > 1 || ways.identities.some((identity) => identity.enabled);
}

/** Whether unlinking identity `identityId` leaves the account a password, a passkey or another identity of an enabled provider. */
export function mayUnlink(ways: WaysIn, identityId: number): boolean {
  if (ways.password || ways.passkeys > 0) return true;
  return ways.identities.some((identity) => identity.id !== identityId && identity.enabled);
}
