import type { Knex } from 'knex';
import type { Context, Next } from 'koa';
import type { Config } from '../config.js';
import type { UserRow } from '../db/users.js';
import { hasControlCharacter } from '../control-characters.js';
import { UnauthenticatedError } from '../errors.js';
import { readerLanguage, type Language } from '../i18n.js';
import type { Actor } from '../services/context.js';
import type { KeyCipher } from '../key-encryption.js';
import type { Logger } from '../log.js';
import type { DirectorySignIn } from '../services/directory/sign-in.js';
import type { Metrics } from '../metrics.js';
import type { Limits } from '../services/limits.js';
import type { PendingSignIns } from '../services/pending-sign-ins.js';
import type { Mailer } from '../services/mail.js';
import type { KdfQueue } from '../services/passwords.js';
import { signedInUserById } from '../services/users.js';
import type { SiteSessions } from './session.js';

/** What every page handler may use. */
export interface WebDeps {
  config: Config;
  db: Knex;
  sessions: SiteSessions;
  limits: Limits;
  kdf: KdfQueue;
  mailer: Mailer;
  /** KEYS_SECRET's cipher, for secrets kept at rest (TOTP keys); undefined without it. */
  cipher: KeyCipher | undefined;
  /** For work that outlives its request (mail sent in the background). */
  log: Logger;
  /** Sign-in outcomes and personal access tokens issued are counted here. */
  metrics: Metrics;
  /** Sign-ins waiting for their second factor, kept where every instance sees them. */
  pendingSignIns: PendingSignIns;
  /** The directories (LDAP) the sign-in form's username and password are also checked against. */
  directories?: DirectorySignIn;
}

/** Loads the signed-in user (if any, and not disabled) into ctx.state.user for every page. */
export function loadCurrentUser(deps: WebDeps) {
  const signupOpen = deps.config.signup === 'open';
  // A development server with no mail server: its "check your inbox" pages say where the mail went.
  const mailToFiles = !deps.config.mail.smtpUrl && deps.config.env !== 'production';
  return async function currentUser(ctx: Context, next: Next): Promise<void> {
    const accountId = await deps.sessions.accountId(ctx);
    ctx.state.user = accountId ? await signedInUserById(deps.db, accountId) : undefined;
    ctx.state.upstreamSecondFactor = ctx.state.user ? await deps.sessions.upstreamSecondFactor(ctx) : false;
    ctx.state.signupOpen = signupOpen;
    ctx.state.mailToFiles = mailToFiles;
    await next();
  };
}

export function requireUser(ctx: Context): UserRow {
  const user = ctx.state.user as UserRow | undefined;
  if (!user) throw new UnauthenticatedError();
  return user;
}

export function actorOf(ctx: Context): Actor {
  const actor: Actor = { userId: requireUser(ctx).id, ip: ctx.ip ?? null };
  if (ctx.state.upstreamSecondFactor) actor.upstreamSecondFactor = true;
  return actor;
}

/** Form fields as strings (a repeated field keeps its first value), for re-showing and validating. */
export function formFields(ctx: Context): Record<string, string> {
  const body = ((ctx.request as { body?: Record<string, unknown> }).body ?? {}) as Record<string, unknown>;
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(body)) {
    const first = Array.isArray(value) ? value[0] : value;
    if (typeof first === 'string') out[key] = first;
  }
  return out;
}

/** A form field that may be repeated (checkboxes): every string value, in order. */
export function formList(ctx: Context, name: string): string[] {
  const value = ((ctx.request as { body?: Record<string, unknown> }).body ?? {})[name];
  const values = Array.isArray(value) ? value : [value];
  return values.filter((v): v is string => typeof v === 'string');
}

const RETURN_BASE = 'http://return-to.invalid';

/**
 * A place to return to after sign-in, sign-up or a mailed link: only a same-site path (`/…`),
 * never another origin. `//host`, `/\host`, `https://host`, control characters and anything a
 * browser could read as another origin fall back to `fallback`. The value is returned as given
 * (a path such as `/.//x` stays path-absolute in a Location header), never normalized into `//x`.
 */
export function safeReturnTo(value: unknown, fallback = '/groups'): string {
  if (typeof value !== 'string' || value.length > 4096 || !/^\/(?![/\\])/.test(value)) return fallback;
  // Browsers drop tabs and newlines from URLs and read "\" as "/": such a path could turn into "//host".
  if (value.includes('\\') || hasControlCharacter(value)) return fallback;
  try {
    return new URL(value, RETURN_BASE).origin === RETURN_BASE ? value : fallback;
  } catch {
    return fallback;
  }
}

/** A return target carried on to the next page (`?return_to=…`), or nothing when there is none to keep. */
export function returnToQuery(value: unknown): string {
  const target = safeReturnTo(value, '');
  return target ? `?return_to=${encodeURIComponent(target)}` : '';
}

/** Where a request came from (client address and user agent), as security mails describe it. */
export function seenFrom(ctx: Context): { ip: string; userAgent: string; lang: Language } {
  return { ip: ctx.ip, userAgent: ctx.get('user-agent'), lang: readerLanguage(ctx) };
}
