import { randomInt } from 'node:crypto';
import type { Knex } from 'knex';
import { generateSecret, generateURI, verify } from 'otplib';
import QRCode from 'qrcode';
import { recordAudit, type AuditAction } from '../db/audit.js';
import {
  acceptTotpStep,
  deleteRecoveryCodes,
  deleteTotp,
  findTotp,
  recoveryCodesMadeAt,
  replaceRecoveryCodes,
  saveUnconfirmedTotp,
  unusedRecoveryCodes,
  useRecoveryCode,
} from '../db/two-factor.js';
import { deletePasskeysOf } from '../db/passkeys.js';
import type { UserRow } from '../db/users.js';
import { ConflictError, ValidationError } from '../errors.js';
import { isSealed, type KeyCipher } from '../key-encryption.js';
import { now, toIso } from '../time.js';
import { digest } from '../tokens.js';
import type { Limits } from './limits.js';

/**
 * Two-factor authentication with an authenticator app (TOTP, RFC 6238: 30-second steps, 6
 * digits, one step of drift either way) and ten single-use recovery codes.
 *
 * - The TOTP secret is sealed with KEYS_SECRET when it is set (AES-256-GCM, bound to the user).
 * - A code is accepted only for a time step later than the last accepted one, by one conditional
 *   update: each code works once, also when the same code arrives 16 times at once.
 * - Recovery codes are stored as SHA-256 digests and spent by one conditional update.
 * - Wrong codes count against the sign-in limits of the account (as wrong passwords do).
 */
export interface TwoFactorDeps {
  db: Knex;
  limits: Limits;
  /** Seals TOTP secrets at rest; undefined without KEYS_SECRET (development). */
  cipher: KeyCipher | undefined;
  /** Shown in the authenticator app beside the account name. */
  issuerName: string;
}

type Person = Pick<UserRow, 'id' | 'username'>;

/** What checking a code needs (no issuer name: nothing is shown). */
type CheckDeps = Omit<TwoFactorDeps, 'issuerName'>;
/** What setting up needs (no limits: a set-up code is checked without counting). */
type SetupDeps = Omit<TwoFactorDeps, 'limits'>;

/** 30-second steps, one step of drift either way. */
const DRIFT_S = 30;
const RECOVERY_CODES = 10;
/** Recovery codes read `xxxxx-xxxxx` in an alphabet without look-alikes (no 0/o, 1/l/i). */
const RECOVERY_ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789';

export interface TwoFactorStatus {
  /** An authenticator app is set up and confirmed: sign-in asks for a second factor. */
  enabled: boolean;
  /** A set-up was started and not confirmed. */
  pending: boolean;
  recoveryCodesLeft: number;
}

export interface TotpSetup {
  /** The secret in base32, for typing into an app that cannot scan. */
  secret: string;
  /** The otpauth:// URI the QR code carries. */
  uri: string;
  /** The QR code as an SVG data: URL (allowed by the site's CSP as an image). */
  qrCode: string;
}

export async function twoFactorStatus(db: Knex, userId: number): Promise<TwoFactorStatus> {
  const [totp, recoveryCodesLeft] = await Promise.all([findTotp(db, userId), unusedRecoveryCodes(db, userId)]);
  return { enabled: Boolean(totp?.confirmed_at), pending: Boolean(totp && !totp.confirmed_at), recoveryCodesLeft };
}

/**
 * What can be shown of the recovery codes after the page that showed them once: how many are
 * left unused and when they were made. The codes themselves are stored only as digests.
 */
export async function recoveryCodesSummary(db: Knex, userId: number): Promise<{ left: number; madeAt: string | null }> {
  const [left, madeAt] = await Promise.all([unusedRecoveryCodes(db, userId), recoveryCodesMadeAt(db, userId)]);
  return { left, madeAt: toIso(madeAt) };
}

/** Whether sign-in asks this user for a second factor. */
export async function hasTwoFactor(db: Knex, userId: number): Promise<boolean> {
  return Boolean((await findTotp(db, userId))?.confirmed_at);
}

function sealKind(userId: number): string {
  return `totp:${userId}`;
}

function openSecret(deps: Pick<TwoFactorDeps, 'cipher'>, userId: number, stored: string): string {
  if (!isSealed(stored)) return stored;
  if (!deps.cipher) throw new Error('a TOTP secret is sealed and KEYS_SECRET is not set');
  return deps.cipher.open(sealKind(userId), stored);
}

async function describeSetup(deps: SetupDeps, user: Person, secret: string): Promise<TotpSetup> {
  const uri = generateURI({ issuer: deps.issuerName, label: user.username, secret });
  const svg = await QRCode.toString(uri, { type: 'svg', errorCorrectionLevel: 'M', margin: 2 });
  return { secret, uri, qrCode: `data:image/svg+xml;base64,${Buffer.from(svg).toString('base64')}` };
}

/**
 * The set-up in progress, or a new one: a new secret is made only when there is none, so the
 * set-up page can be reloaded (or shown again after a wrong code) with the same QR code.
 */
export async function totpSetup(deps: SetupDeps, user: Person, options: { restart?: boolean } = {}): Promise<TotpSetup> {
  const found = await findTotp(deps.db, user.id);
  if (found?.confirmed_at) throw new ConflictError('code', 'Two-factor authentication is already on.');
  if (found && !options.restart) return describeSetup(deps, user, openSecret(deps, user.id, found.secret));
  const secret = generateSecret();
  await saveUnconfirmedTotp(deps.db, user.id, deps.cipher ? deps.cipher.seal(sealKind(user.id), secret) : secret, now());
  return describeSetup(deps, user, secret);
}

/** The time step a 6-digit code is valid for (now, or one step either side), or undefined. */
async function stepOf(secret: string, code: string): Promise<number | undefined> {
  if (!/^\d{6}$/.test(code)) return undefined;
  const result = await verify({ secret, token: code, epochTolerance: DRIFT_S });
  return result.valid && 'timeStep' in result ? result.timeStep : undefined;
}

function newRecoveryCodes(): string[] {
  const part = () => Array.from({ length: 5 }, () => RECOVERY_ALPHABET[randomInt(RECOVERY_ALPHABET.length)]).join('');
  return Array.from({ length: RECOVERY_CODES }, () => `${part()}-${part()}`);
}

/** What a person types, as the digest is taken of: lower case, without spaces or dashes. */
function recoveryDigest(code: string): string {
  return digest(code.toLowerCase().replace(/[\s-]/g, ''));
}

function normaliseCode(code: string): string {
  return code.trim().replace(/\s/g, '');
}

async function storeRecoveryCodes(db: Knex, userId: number, at: string): Promise<string[]> {
  const codes = newRecoveryCodes();
  await replaceRecoveryCodes(db, userId, codes.map(recoveryDigest), at);
  return codes;
}

/**
 * Confirms the set-up with a code from the app: two-factor authentication is then on, and the
 * ten recovery codes are returned, to be shown once.
 */
export async function confirmTotp(deps: SetupDeps, user: Person, code: string, ip: string | null): Promise<string[]> {
  const found = await findTotp(deps.db, user.id);
  if (!found || found.confirmed_at) throw new ConflictError('code', found ? 'Two-factor authentication is already on.' : 'Start the set-up again: it was not found.');
  const step = await stepOf(openSecret(deps, user.id, found.secret), normaliseCode(code));
  if (step === undefined) throw new ValidationError('code', 'That code is not right. Enter the 6-digit code your app shows now.');
  return deps.db.transaction(async (trx) => {
    const at = now();
    if (!(await acceptTotpStep(trx, user.id, step, at, true))) throw new ConflictError('code', 'Two-factor authentication is already on.');
    const codes = await storeRecoveryCodes(trx, user.id, at);
    await recordAudit(trx, { groupId: null, actorId: user.id, action: 'user.two_factor.enable', target: user.username, ip }, at);
    return codes;
  });
}

export type SecondFactor = 'otp' | 'recovery';

/**
 * Checks a second factor: a 6-digit code from the app, or a recovery code (spent). Counted
 * against the account's sign-in limits like a password: a 429 past them, and a right code gives
 * the address its point back. Throws a ValidationError on `code` when it is wrong.
 */
export async function verifySecondFactor(deps: CheckDeps, user: Person, code: string, ip: string): Promise<SecondFactor> {
  const attempt = await deps.limits.beforeSignIn(`2fa:${user.id}`, ip);
  const used = await checkSecondFactor(deps, user, normaliseCode(code));
  if (!used) {
    await deps.limits.signInFailed(attempt);
    throw new ValidationError('code', 'That code is not right, or it was used already.');
  }
  await deps.limits.signInSucceeded(attempt);
  return used;
}

async function checkSecondFactor(deps: CheckDeps, user: Person, code: string): Promise<SecondFactor | undefined> {
  const found = await findTotp(deps.db, user.id);
  if (!found?.confirmed_at) return undefined;
  if (/^\d{6}$/.test(code)) {
    const step = await stepOf(openSecret(deps, user.id, found.secret), code);
    return step !== undefined && (await acceptTotpStep(deps.db, user.id, step, now(), false)) ? 'otp' : undefined;
  }
  if (code.length > 40) return undefined;
  return (await useRecoveryCode(deps.db, user.id, recoveryDigest(code), now())) ? 'recovery' : undefined;
}

/** New recovery codes (the old ones stop working), after a fresh second factor. */
export async function regenerateRecoveryCodes(deps: TwoFactorDeps, user: Person, code: string, ip: string): Promise<string[]> {
  await verifySecondFactor(deps, user, code, ip);
  return deps.db.transaction(async (trx) => {
    const at = now();
    const codes = await storeRecoveryCodes(trx, user.id, at);
    await recordAudit(trx, { groupId: null, actorId: user.id, action: 'user.two_factor.recovery_codes', target: user.username, ip }, at);
    return codes;
  });
}

/** Turns two-factor authentication off, after a fresh second factor. */
export async function disableTwoFactor(deps: TwoFactorDeps, user: Person, code: string, ip: string): Promise<void> {
  await verifySecondFactor(deps, user, code, ip);
  await removeTwoFactor(deps.db, user, { actorId: user.id, ip, action: 'user.two_factor.disable' });
}

/** Removes the app and the recovery codes (and with `passkeys`, every passkey), with its audit record, in one transaction. */
export async function removeTwoFactor(db: Knex, user: Person, audit: { actorId: number | null; ip: string | null; action: AuditAction }, options: { passkeys?: boolean } = {}): Promise<void> {
  await db.transaction(async (trx) => {
    await deleteTotp(trx, user.id);
    await deleteRecoveryCodes(trx, user.id);
    if (options.passkeys) await deletePasskeysOf(trx, user.id);
    await recordAudit(trx, { groupId: null, actorId: audit.actorId, action: audit.action, target: user.username, ip: audit.ip }, now());
  });
}
