import * as commonWords from '@zxcvbn-ts/language-common';
import { z } from 'zod';
import { ValidationError } from '../errors.js';
import { ROLES, VISIBILITY_LEVELS } from '../vocabulary.js';

/**
 * Field rules of users, groups and applications, shared by the pages, the API and the CLI so that each
 * field means the same everywhere. Messages name the field and say what it must be.
 */
export const username = z
  .string({ error: 'username is required' })
  .trim()
  .min(2, 'username must be 2–39 characters')
  .max(39, 'username must be 2–39 characters')
  .regex(/^[a-zA-Z0-9\-_.]+$/, 'username may contain only letters, digits, "-", "_" and "."');

export const email = z
  .string({ error: 'email is required' })
  .trim()
  .max(254, 'email must be at most 254 characters')
  .pipe(z.email('email must be a valid email address'));

export const personName = z.string().trim().max(100, 'name must be at most 100 characters').default('');

/** zxcvbn-ts's list of common passwords (about 49,000, lower case), kept as a set once. */
const COMMON_PASSWORDS = new Set<string>(commonWords.dictionary['passwords-common'] as string[]);

/** A new password: 8 to 256 characters and not on the common-password list. */
export const password = z
  .string({ error: 'password is required' })
  .min(8, 'password must be at least 8 characters')
  .max(256, 'password must be at most 256 characters')
  .refine((v) => !COMMON_PASSWORDS.has(v.toLowerCase()), { message: 'password is one of the most common passwords; choose another' });

/** A new password must not be the account's username or e-mail address (in any case). */
export function passwordIsNotIdentity(user: { username: string; email: string; password: string }): boolean {
  const pw = user.password.toLowerCase();
  return pw !== user.username.toLowerCase() && pw !== user.email.toLowerCase();
}

export const groupName = z
  .string({ error: 'name is required' })
  .trim()
  .min(1, 'name is required')
  .max(100, 'name must be at most 100 characters');

const RESERVED_PATHS = new Set(['new', 'settings', 'edit', 'api', 'apis']);

export const groupPath = z
  .string({ error: 'path is required' })
  .trim()
  .min(2, 'path must be 2–64 characters')
  .max(64, 'path must be 2–64 characters')
  .regex(/^[a-z0-9\-_.]+$/, 'path may contain only lower-case letters, digits, "-", "_" and "."')
  // Words the pages use under /groups/ can never name a group.
  .refine((v) => !RESERVED_PATHS.has(v), { message: 'path is reserved; choose another' });

export const description = z.string().trim().max(400, 'description must be at most 400 characters').default('');

export const visibilityLevel = z.enum(VISIBILITY_LEVELS, {
  error: 'visibilityLevel must be private, internal or public',
});

export const role = z.enum(ROLES, { error: 'role must be owner, maintainer or member' });

/** Parses with a schema and throws a ValidationError naming the first bad field. */
export function parse<T extends z.ZodType>(schema: T, input: unknown): z.infer<T> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const field = issue.path.length ? issue.path.map(String).join('.') : 'body';
  throw new ValidationErrorFromIssue(field, issue);
}

class ValidationErrorFromIssue extends ValidationError {
  constructor(field: string, issue: z.core.$ZodIssue) {
    const message = issue.code === 'unrecognized_keys'
      ? `unknown field ${issue.keys.map((k) => `"${k}"`).join(', ')}`
      : issue.code === 'invalid_type' && issue.input === undefined
        ? `${field} is required`
        : issue.code === 'invalid_type'
          ? `${field} must be a ${issue.expected}`
          : issue.message;
    super(issue.code === 'unrecognized_keys' ? issue.keys[0]! : field, message);
  }
}
