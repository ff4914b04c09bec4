import type { Knex } from 'knex';
import type { Context, Next } from 'koa';
import type { Config } from '../config.js';
import type { UserRow } from '../db/users.js';
import { UnauthenticatedError } from '../errors.js';
import type { Actor } from '../services/context.js';
import type { KeyCipher } from '../key-encryption.js';
import type { Logger } from '../log.js';
import type { Limits } from '../services/limits.js';
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
}

/** Loads the signed-in user (if any, and not disabled) into ctx.state.user for every page. */
export function loadCurrentUser(deps: WebDeps) {
  return async function currentUser(ctx: Context, next: Next): Promise<void> {
    const accountId = await deps.sessions.accountId(ctx);
    ctx.state.user = accountId ? await signedInUserById(deps.db, accountId) : undefined;
    ctx.state.signupOpen = deps.config.signup === 'open';
    await next();
  };
}

export function requireUser(ctx: Context): UserRow {
  const user = ctx.state.user as UserRow | undefined;
  if (!user) throw new UnauthenticatedError();
  return user;
}

export function actorOf(ctx: Context): Actor {
  return { userId: requireUser(ctx).id, ip: ctx.ip ?? null };
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

/** Only same-site relative paths are followed after sign-in, never another origin. */
export function safeReturnTo(value: unknown): string {
  return typeof value === 'string' && /^\/(?![/\\])/.test(value) ? value : '/groups';
}
