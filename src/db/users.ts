import type { Knex } from 'knex';
import { hasTwoFactorColumn } from './two-factor.js';

export interface UserRow {
  id: number;
  username: string;
  email: string;
  name: string;
  password_hash: string;
  /** When the current address was proved by following a verification link; null until then. */
  email_verified_at: string | Date | null;
  created_at: string | Date;
  updated_at: string | Date;
  /** A site administrator (SQLite answers 1 or 0, PostgreSQL a boolean). */
  is_admin: boolean | number;
  /** Set while an administrator keeps the account disabled. */
  disabled_at: string | Date | null;
  /** The language chosen for the account's pages and mails (a code of i18n.ts LANGUAGES); null: the browser's. */
  language: string | null;
}

const COLUMNS = ['id', 'username', 'email', 'name', 'password_hash', 'email_verified_at', 'created_at', 'updated_at', 'is_admin', 'disabled_at', 'language'];

export function findUserById(db: Knex, id: number): Promise<UserRow | undefined> {
  return db('users').where({ id }).first(COLUMNS);
}

export function findUserByUsername(db: Knex, username: string): Promise<UserRow | undefined> {
  return db('users').where({ username_key: username.toLowerCase() }).first(COLUMNS);
}

/** A user as a password sign-in reads it: with whether two-factor authentication is on (0 or 1). */
export type LoginRow = UserRow & { two_factor: number | boolean };

/**
 * Sign-in accepts a username or an email; an "@" can only be in an email. The row says, in the
 * same statement, whether the account asks for a second factor.
 */
export function findUserByLogin(db: Knex, login: string): Promise<LoginRow | undefined> {
  const key = login.trim().toLowerCase();
  const column = key.includes('@') ? 'email_key' : 'username_key';
  return db('users').where({ [column]: key }).first([...COLUMNS, hasTwoFactorColumn(db, 'users.id', 'two_factor')]);
}

export async function insertUser(
  db: Knex,
  user: { username: string; email: string; name: string; passwordHash: string; at: string; emailVerified: boolean },
): Promise<UserRow> {
  const [row] = await db('users')
    .insert({
      username: user.username,
      username_key: user.username.toLowerCase(),
      email: user.email,
      email_key: user.email.toLowerCase(),
      name: user.name,
      password_hash: user.passwordHash,
      email_verified_at: user.emailVerified ? user.at : null,
      created_at: user.at,
      updated_at: user.at,
    })
    .returning(COLUMNS);
  return row as UserRow;
}

export async function userTakenField(db: Knex, username: string, email: string): Promise<'username' | 'email' | null> {
  const row = await db('users')
    .select('username_key', 'email_key')
    .where({ username_key: username.toLowerCase() })
    .orWhere({ email_key: email.toLowerCase() })
    .first();
  if (!row) return null;
  return row.username_key === username.toLowerCase() ? 'username' : 'email';
}

/** Replaces a password hash only if it is still the one that was verified (no lost update). */
export async function replacePasswordHash(db: Knex, id: number, current: string, next: string): Promise<boolean> {
  return (await db('users').where({ id, password_hash: current }).update({ password_hash: next })) === 1;
}

export async function usernameOf(db: Knex, id: number): Promise<string | undefined> {
  return ((await db('users').where({ id }).first('username')) as { username: string } | undefined)?.username;
}

/** Verifies the account's address, only if it is still `email` (the address the link was sent to). */
export async function markEmailVerified(db: Knex, id: number, email: string, at: string): Promise<boolean> {
  return (await db('users').where({ id, email_key: email.toLowerCase() }).update({ email_verified_at: at })) === 1;
}

/** The account's address becomes `email`, verified (its link was followed). False when the account is gone. */
export async function replaceEmail(db: Knex, id: number, email: string, at: string): Promise<boolean> {
  return (await db('users').where({ id }).update({ email, email_key: email.toLowerCase(), email_verified_at: at, updated_at: at })) === 1;
}

export async function setPasswordHash(db: Knex, id: number, hash: string, at: string): Promise<void> {
  await db('users').where({ id }).update({ password_hash: hash, updated_at: at });
}

/** Sets the account's language (null: the browser's); false when it was that already. */
export async function setUserLanguage(db: Knex, id: number, language: string | null, at: string): Promise<boolean> {
  return (await db('users').where({ id }).whereRaw('language IS DISTINCT FROM ?', [language]).update({ language, updated_at: at })) === 1;
}
