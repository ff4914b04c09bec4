import type { Knex } from 'knex';
import { z } from 'zod';
import { ConflictError, NotFoundError, ValidationError } from '../errors.js';
import { findUserByLogin, findUserByUsername, insertUser, userTakenField, type UserRow } from '../db/users.js';
import { isUniqueViolation } from '../db/knex.js';
import { now } from '../db/time.js';
import { decoyHash, hashPassword, verifyPassword } from './passwords.js';
import * as rules from './rules.js';

export const newUserSchema = z.object({
  username: rules.username,
  email: rules.email,
  name: rules.personName,
  password: rules.password,
});
export type NewUser = z.input<typeof newUserSchema>;

export async function createUser(db: Knex, input: NewUser): Promise<UserRow> {
  const data = rules.parse(newUserSchema, input);
  const taken = await userTakenField(db, data.username, data.email);
  if (taken) throw new ConflictError(taken, `${taken} "${taken === 'username' ? data.username : data.email}" is already taken`);
  const passwordHash = await hashPassword(data.password);
  try {
    return await insertUser(db, { ...data, passwordHash, at: now() });
  } catch (err) {
    // Two sign-ups racing for one name: the unique index decides.
    if (isUniqueViolation(err)) {
      const field = (await userTakenField(db, data.username, data.email)) ?? 'username';
      throw new ConflictError(field, `${field} is already taken`);
    }
    throw err;
  }
}

/** Returns the user when the password matches; otherwise undefined, after the same amount of work. */
export async function authenticate(db: Knex, login: string, password: string): Promise<UserRow | undefined> {
  if (!login || !password || login.length > 254 || password.length > 1024) {
    await verifyPassword(password ?? '', await decoyHash());
    return undefined;
  }
  const user = await findUserByLogin(db, login);
  const ok = await verifyPassword(password, user?.password_hash ?? (await decoyHash()));
  return user && ok ? user : undefined;
}

export async function requireUserByUsername(db: Knex, username: string, field = 'user'): Promise<UserRow> {
  if (!username) throw new ValidationError(field, `${field} is required`);
  const user = await findUserByUsername(db, username);
  if (!user) throw new NotFoundError(`no user "${username}"`);
  return user;
}
