import type { Knex } from 'knex';
import {
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
} from '@simplewebauthn/server';
import type { AuthenticationResponseJSON, AuthenticatorTransport, RegistrationResponseJSON } from '@simplewebauthn/server';
import { recordAudit } from '../db/audit.js';
import { waysInLocked } from '../db/identities.js';
import { mayRemovePasskey } from '../policies/sign-in-methods.js';
import { hasPassword } from './passwords.js';
import { deletePasskey, findPasskey, insertPasskey, passkeysOf, pruneSpentChallenges, recordPasskeyUse, spendChallenge, type PasskeyRow } from '../db/passkeys.js';
import type { UserRow } from '../db/users.js';
import { AppError, ValidationError } from '../errors.js';
import { now } from '../time.js';
import { digest } from '../tokens.js';
import type { Limits } from './limits.js';
import { signedInUserById } from './users.js';

/**
 * Passkeys (WebAuthn, with @simplewebauthn/server): a person registers several, each with a
 * name, and uses one to sign in with no username or password (a discoverable credential with
 * user verification), or as the second factor after a password.
 *
 * The relying party is the issuer: its host is the RP ID and its origin the only origin accepted.
 * The challenge travels in a signed cookie (see web/passkey-routes.ts) and answers once: the
 * digest of every answered challenge is kept until it expires.
 */
export interface PasskeyDeps {
  db: Knex;
  /** The issuer URL: the RP ID is its host name, the expected origin its origin. */
  issuer: string;
}

/** How long a challenge may be answered. */
export const CHALLENGE_MS = 5 * 60_000;
const MAX_PASSKEYS = 20;
const MAX_RESPONSE_CHARS = 16_384;

type Person = Pick<UserRow, 'id' | 'username' | 'name'>;

function relyingParty(issuer: string) {
  const url = new URL(issuer);
  return { rpID: url.hostname, origin: url.origin };
}

function transportsOf(row: PasskeyRow): AuthenticatorTransport[] {
  return row.transports ? (row.transports.split(',') as AuthenticatorTransport[]) : [];
}

export function listPasskeys(db: Knex, userId: number): Promise<PasskeyRow[]> {
  return passkeysOf(db, userId);
}

/** Options for the browser's navigator.credentials.create(); the challenge is in them. */
export async function registrationOptions(deps: PasskeyDeps, user: Person) {
  const existing = await passkeysOf(deps.db, user.id);
  if (existing.length >= MAX_PASSKEYS) throw new ValidationError('name', `You have ${MAX_PASSKEYS} passkeys, the most an account may have. Remove one first.`);
  return generateRegistrationOptions({
    rpName: 'Horizon ID',
    rpID: relyingParty(deps.issuer).rpID,
    userName: user.username,
    userDisplayName: user.name || user.username,
    userID: new TextEncoder().encode(String(user.id)),
    attestationType: 'none',
    excludeCredentials: existing.map((row) => ({ id: row.credential_id, transports: transportsOf(row) })),
    // Discoverable, so that it can sign in without a username; verified (PIN, biometrics) when it can.
    authenticatorSelection: { residentKey: 'required', userVerification: 'preferred' },
  });
}

function parseResponse<T>(raw: string, field: string): T {
  if (!raw || raw.length > MAX_RESPONSE_CHARS) throw new ValidationError(field, 'The passkey did not answer. Try again.');
  try {
    const parsed = JSON.parse(raw) as unknown;
    if (typeof parsed !== 'object' || parsed === null || typeof (parsed as { id?: unknown }).id !== 'string') throw new Error('not a credential');
    return parsed as T;
  } catch {
    throw new ValidationError(field, 'The passkey’s answer could not be read. Try again.');
  }
}

/** Spends the challenge (once); a second answer to it is refused. */
async function spend(db: Knex, challenge: string, field: string): Promise<void> {
  if (!(await spendChallenge(db, digest(challenge), new Date(Date.now() + CHALLENGE_MS).toISOString()))) {
    throw new ValidationError(field, 'That passkey answer was used already. Try again.');
  }
}

/** Verifies the browser's answer to `challenge` and stores the new passkey under `name`. */
export async function addPasskey(deps: PasskeyDeps, user: Person, input: { name: string; response: string; challenge: string }, ip: string | null): Promise<void> {
  const name = input.name.trim();
  if (!name) throw new ValidationError('name', 'Give the passkey a name, e.g. “Laptop”.');
  if (name.length > 100) throw new ValidationError('name', 'The name can be at most 100 characters.');
  const response = parseResponse<RegistrationResponseJSON>(input.response, 'name');
  const { rpID, origin } = relyingParty(deps.issuer);
  const result = await verifyRegistrationResponse({ response, expectedChallenge: input.challenge, expectedOrigin: origin, expectedRPID: rpID }).catch(() => undefined);
  if (!result?.verified) throw new ValidationError('name', 'The passkey could not be verified. Try again.');
  await spend(deps.db, input.challenge, 'name');
  const { credential } = result.registrationInfo;
  await deps.db.transaction(async (trx) => {
    const at = now();
    const added = await insertPasskey(trx, {
      userId: user.id,
      credentialId: credential.id,
      publicKey: Buffer.from(credential.publicKey).toString('base64url'),
      counter: credential.counter,
      transports: (credential.transports ?? []).join(','),
      name,
      at,
    });
    if (!added) throw new AppError(409, 'conflict', 'That passkey is registered already.', 'name');
    await recordAudit(trx, { groupId: null, actorId: user.id, action: 'user.passkey.add', target: user.username, details: { passkey: name }, ip }, at);
  });
}

/** Options for navigator.credentials.get(): any passkey of this site, or only `userId`'s (second factor). */
export async function authenticationOptions(deps: PasskeyDeps, userId?: number) {
  const allow = userId === undefined ? undefined : await passkeysOf(deps.db, userId);
  return generateAuthenticationOptions({
    rpID: relyingParty(deps.issuer).rpID,
    allowCredentials: allow?.map((row) => ({ id: row.credential_id, transports: transportsOf(row) })),
    userVerification: userId === undefined ? 'required' : 'preferred',
  });
}

/**
 * Verifies an answer to `challenge`: the passkey must be registered (to `userId` when given) and
 * its signature right; for a sign-in without a password, the person must have been verified by
 * the authenticator (PIN or biometrics). Returns the account, or throws a ValidationError on
 * `field`; a disabled account is refused like an unknown passkey. Counted against the sign-in
 * limits as a password is: the attempt's points are taken before the answer is verified (a 429
 * past the limits), and a right answer gives them back. The account counted is the second factor's after a password (`userId` given,
 * as a code would be), otherwise the passkey's own account; an unknown passkey is a key of its
 * own, as an unknown login name is.
 */
export async function checkPasskeySignIn(
  deps: PasskeyDeps & { limits: Limits },
  input: { response: string; challenge: string; userId?: number },
  ip: string,
  field = 'passkey',
): Promise<{ user: UserRow; userVerified: boolean }> {
  const response = parseResponse<AuthenticationResponseJSON>(input.response, field);
  const row = await findPasskey(deps.db, response.id);
  const account = input.userId !== undefined ? `2fa:${input.userId}` : row ? `user:${row.user_id}` : `passkey:${digest(response.id)}`;
  const attempt = await deps.limits.beforeSignIn(account, ip);
  let verified: { user: UserRow; userVerified: boolean };
  try {
    verified = await verifyAnswer(deps, response, row, input, field);
  } catch (err) {
    await (err instanceof ValidationError ? deps.limits.signInFailed(attempt) : deps.limits.signInNotChecked(attempt));
    throw err;
  }
  await deps.limits.signInSucceeded(attempt);
  return verified;
}

async function verifyAnswer(
  deps: PasskeyDeps,
  response: AuthenticationResponseJSON,
  row: PasskeyRow | undefined,
  input: { challenge: string; userId?: number },
  field: string,
): Promise<{ user: UserRow; userVerified: boolean }> {
  const refused = new ValidationError(field, 'That passkey is not registered here, or its answer is not right.');
  if (!row || (input.userId !== undefined && row.user_id !== input.userId)) throw refused;
  const { rpID, origin } = relyingParty(deps.issuer);
  const result = await verifyAuthenticationResponse({
    response,
    expectedChallenge: input.challenge,
    expectedOrigin: origin,
    expectedRPID: rpID,
    credential: { id: row.credential_id, publicKey: Buffer.from(row.public_key, 'base64url'), counter: Number(row.counter), transports: transportsOf(row) },
    requireUserVerification: input.userId === undefined,
  }).catch(() => undefined);
  if (!result?.verified) throw refused;
  await spend(deps.db, input.challenge, field);
  const user = await signedInUserById(deps.db, row.user_id);
  if (!user) throw refused;
  await recordPasskeyUse(deps.db, row.id, result.authenticationInfo.newCounter, now());
  return { user, userVerified: result.authenticationInfo.userVerified };
}

/** Forgets answered challenges once they could not be answered anyway. */
export function pruneAnsweredChallenges(db: Knex): Promise<number> {
  return pruneSpentChallenges(db, now());
}

/**
 * Removes one of the person's passkeys (after the caller checked who they are); returns its name.
 * Refused (409) when it is the account's last way in: no password (an account an upstream
 * sign-in made), no other passkey and no linked identity of an enabled provider; the check reads
 * the account with its row locked, in the transaction that removes.
 */
export async function removePasskey(db: Knex, user: Person, id: number, ip: string | null): Promise<{ name: string }> {
  return db.transaction(async (trx) => {
    const ways = await waysInLocked(trx, user.id);
    const removed = await deletePasskey(trx, user.id, id);
    if (!removed) throw new AppError(404, 'not_found', 'There is no such passkey.');
    if (ways && !mayRemovePasskey({ password: hasPassword(ways.passwordHash), passkeys: ways.passkeys, identities: ways.identities })) {
      throw new AppError(409, 'last_sign_in_method', 'This passkey is the only way you can sign in to this account. Set a password or link another sign-in method first, then remove it.');
    }
    await recordAudit(trx, { groupId: null, actorId: user.id, action: 'user.passkey.remove', target: user.username, details: { passkey: removed.name }, ip }, now());
    return { name: removed.name };
  });
}
