import type { Context } from 'koa';
import { MAX_POLICY_DAYS } from '../policies/token-lifetime.js';
import { AppError, ConflictError, RetryLaterError, ValidationError, type FieldProblem } from '../errors.js';

/**
 * The labels of the forms' fields, by form and field name: the one place a field's name in words
 * is written. `views/_field.ejs` shows them (a page passes its form's `labels`), and an error
 * about a field starts with the same words ("Homepage URL must be an absolute http(s) URL"),
 * whereas the API's messages name its own field names (homepageURL).
 */
export const LABELS = {
  signup: { username: 'Username', email: 'Email', name: 'Name', password: 'Password' },
  group: { name: 'Name', path: 'Path', description: 'Description', visibilityLevel: 'Visibility', requireTwoFactor: 'Require two-factor authentication', personalTokenMaxLifetimeDays: 'Maximum lifetime of personal access tokens' },
  app: {
    name: 'Application name',
    homepageURL: 'Homepage URL',
    description: 'Description',
    callbackURL: 'Authorization callback URL',
    signOutRedirectURLs: 'Sign-out redirect URLs',
    type: 'Application type',
    deviceFlow: 'Enable Device Flow',
    requirePushedAuthorizationRequests: 'Require pushed authorization requests',
    backchannelLogoutURL: 'Back-channel logout URL',
    clientCredentials: 'Allow the application to act as itself',
  },
  token: { name: 'Token name', scopes: 'Scopes', expiration: 'Expiration', groups: 'Groups' },
  profile: { name: 'Name', email: 'E-mail address', current_password: 'Current password' },
  password: { current_password: 'Current password', password: 'New password', password_confirmation: 'Confirm new password' },
  member: { user: 'Username or email', role: 'Role' },
  webhook: { url: 'Payload URL', secret: 'Secret', events: 'Events', active: 'Active' },
  resource: { identifier: 'Identifier', name: 'Name', tokenFormat: 'Token format', scopes: 'Scopes' },
  deleteAccount: { password: 'Your password' },
  forgotPassword: { email: 'Email' },
  resetPassword: { password: 'New password', password_confirmation: 'New password again' },
  signupConfirm: { username: 'Username', password: 'Password' },
} as const satisfies Record<string, Record<string, string>>;

export type Labels = Readonly<Record<string, string>>;

/** Fields typed one item a line: an item's problem names its line. */
const LINE_FIELDS = new Set(['signOutRedirectURLs']);

/**
 * What a form's box takes, said whatever was wrong with it, for fields whose box takes other values
 * than the API's field: the group's cap on token lifetimes is an empty box for no limit where the API
 * takes null, and a word in it is not "required" but not a number.
 */
const PAGE_RULES: Readonly<Record<string, string>> = {
  personalTokenMaxLifetimeDays: `must be a whole number of days from 1 to ${MAX_POLICY_DAYS}, or empty for no limit`,
};

/**
 * The errors of a form submission as the page shows them, `{ formField: message }`: every bad
 * field at once, each message in its label's words. `formField` renames a service's field to the
 * form's (the token form's `expiration` is the service's `expiresInDays`). Undefined when the
 * error is not about the form's fields: it then goes to the error page.
 */
export function formErrors(
  err: unknown,
  labels: Labels,
  formField: Readonly<Record<string, string>> = {},
  lineNumbers: Readonly<Record<string, readonly number[]>> = {},
): Record<string, string> | undefined {
  if (!(err instanceof AppError && err.field)) return undefined;
  const problems: FieldProblem[] = err instanceof ValidationError || err instanceof ConflictError
    ? err.problems
    : [{ field: err.field, message: err.message }];
  const errors: Record<string, string> = {};
  for (const problem of problems) {
    const field = formField[problem.field] ?? problem.field;
    const line = lineOf(problem, lineNumbers[problem.field]);
    // Every bad line of a box typed one item a line is named, each after the first in the same sentence.
    if (line !== undefined && errors[field] !== undefined && labels[field] && problem.problem) errors[field] += `; line ${line}, ${problem.problem}`;
    else errors[field] ??= inWords(problem, labels[field], line);
  }
  return errors;
}

/**
 * The line of the box an item's problem is about: `lines` gives each item's line when blank lines
 * were dropped before the items were checked; else the item's place. Undefined for other fields.
 */
function lineOf(problem: FieldProblem, lines: readonly number[] | undefined): number | undefined {
  if (problem.index === undefined || !LINE_FIELDS.has(problem.field)) return undefined;
  return lines?.[problem.index] ?? problem.index + 1;
}

function inWords(problem: FieldProblem, label: string | undefined, line: number | undefined): string {
  if (label && Object.hasOwn(PAGE_RULES, problem.field)) return `${label} ${PAGE_RULES[problem.field]}`;
  if (!label || !problem.problem) return sentence(problem.message);
  return `${label}${line === undefined ? '' : `, line ${line},`} ${problem.problem}`;
}

/** A message that does not start with a label still starts as a sentence. */
export function sentence(message: string): string {
  return message.charAt(0).toUpperCase() + message.slice(1);
}

/**
 * `formErrors`, and besides: a limit's refusal (429) or a busy server (503) shown on
 * `fallbackField`, with its Retry-After set.
 */
export function formErrorsOrRetry(ctx: Context, err: unknown, fallbackField: string, labels: Labels): Record<string, string> | undefined {
  if (err instanceof RetryLaterError) {
    ctx.set('Retry-After', String(err.retryAfterS));
    return { [err.field ?? fallbackField]: err.message };
  }
  return formErrors(err, labels);
}

/** The status a form re-shown with its errors answers: the error's own, else 400. */
export function formStatus(err: unknown): number {
  return err instanceof AppError ? err.status : 400;
}
