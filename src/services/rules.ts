import * as commonWords from '@zxcvbn-ts/language-common';
import { z } from 'zod';
import { problemOf, ValidationError, type FieldProblem } from '../errors.js';
import { CLIENT_TYPES, ROLES, VISIBILITY_LEVELS } from '../vocabulary.js';

/**
 * Input rules: the fields of users, groups and applications, the API's bodies and query strings.
 * The pages, the API and the CLI parse with them, so that each field means the same everywhere,
 * and the API's OpenAPI document is generated from them (api/openapi.ts), so that each limit is
 * written here only. Messages name the field and say what it must be. Record ids and client ids,
 * which the presenters below this floor share, are in ids.ts.
 */
export const username = z
  .string({ error: 'username is required' })
  .trim()
  .min(2, 'username must be 2–39 characters')
  .max(39, 'username must be 2–39 characters')
  .regex(/^[a-zA-Z0-9\-_.]+$/, 'username may contain only ASCII letters, digits, "-", "_" and "."');

/** The longest e-mail address (RFC 5321's path limit), and so the longest login a sign-in form takes. */
export const MAX_LOGIN_LENGTH = 254;

export const email = z
  .string({ error: 'email is required' })
  .trim()
  .max(MAX_LOGIN_LENGTH, `email must be at most ${MAX_LOGIN_LENGTH} characters`)
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

/** The name of a group, an application or an access token. */
export const name = z
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

// Applications: the bodies of /apis/v2/groups/{id}/oauth-apps and of the Developer pages.

const MAX_URL_LENGTH = 2048;
const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

function safeUrl(value: string): URL | undefined {
  try {
    return new URL(value);
  } catch {
    return undefined;
  }
}

/** Why `value` cannot be a place people are sent back to (the callback, a sign-out URL), or undefined when it can. */
function redirectUrlProblem(value: string): string | undefined {
  const url = safeUrl(value);
  if (!url) return 'must be an absolute URL';
  if (value.includes('#')) return 'must not contain a fragment (#…)';
  const loopbackHttp = url.protocol === 'http:' && LOOPBACK.has(url.hostname);
  if (url.protocol !== 'https:' && !loopbackHttp) return 'must use https (http only for localhost, 127.0.0.1 or [::1])';
  return undefined;
}

const homepageURL = z
  .string({ error: 'homepageURL is required' })
  .trim()
  .max(MAX_URL_LENGTH, `homepageURL must be at most ${MAX_URL_LENGTH} characters`)
  .refine((v) => {
    const url = safeUrl(v);
    return !!url && (url.protocol === 'https:' || url.protocol === 'http:');
  }, 'homepageURL must be an absolute http(s) URL')
  .describe('An absolute http(s) URL')
  .meta({ format: 'uri' });

const callbackURL = z
  .string({ error: 'callbackURL is required' })
  .trim()
  .max(MAX_URL_LENGTH, `callbackURL must be at most ${MAX_URL_LENGTH} characters`)
  .superRefine((v, ctx) => {
    const problem = redirectUrlProblem(v);
    if (problem) ctx.addIssue({ code: 'custom', message: `callbackURL ${problem}` });
  })
  .describe(
    'An absolute URL without a fragment: https, or http only for localhost, 127.0.0.1 or [::1]; a `public` application may not use localhost. The authorize request\'s redirect_uri must equal it exactly, except that a `public` application\'s http://127.0.0.1 or http://[::1] callback matches on any port (RFC 8252). Changing it ends every user\'s authorization of the application: each must authorize it again.',
  )
  .meta({ format: 'uri' });

/**
 * RFC 8252 §8.3: a native application's loopback callback names the loopback address (127.0.0.1
 * or [::1]) rather than `localhost`, which the machine may resolve elsewhere, and which another
 * program may answer on. A public application is held to it; a confidential one (a development
 * server) keeps `localhost`. Undefined when the callback is fine for a public application.
 */
export function publicCallbackProblem(callbackURL: string): string | undefined {
  const host = safeUrl(callbackURL)?.hostname.toLowerCase();
  if (host === 'localhost' || host?.endsWith('.localhost')) {
    return 'callbackURL must not use localhost in a public application: use http://127.0.0.1 or http://[::1], on any port';
  }
  return undefined;
}

const MAX_SIGN_OUT_URLS = 10;

/**
 * Where RP-initiated logout may send a person back to: each URL follows the callback's rules and
 * is matched exactly (string-equal) against `post_logout_redirect_uri`. A repeated URL counts once.
 * The length of each is checked with the others (the document states it as the items' maxLength).
 */
const signOutRedirectURLs = z
  .array(z.string().trim().meta({ maxLength: MAX_URL_LENGTH, format: 'uri' }), { error: 'signOutRedirectURLs must be a list of URLs' })
  .max(MAX_SIGN_OUT_URLS, `signOutRedirectURLs may hold at most ${MAX_SIGN_OUT_URLS} URLs`)
  .superRefine((urls, ctx) => {
    urls.forEach((url, i) => {
      const problem = url.length > MAX_URL_LENGTH ? `must be at most ${MAX_URL_LENGTH} characters` : redirectUrlProblem(url);
      if (problem) ctx.addIssue({ code: 'custom', path: [i], message: `signOutRedirectURLs[${i}] ${problem}` });
    });
  })
  .transform((urls) => [...new Set(urls)])
  .describe(
    'Sign-out redirect URLs: where RP-initiated logout (`GET /login/oauth/logout?client_id=…&post_logout_redirect_uri=…`) may send a person back to after signing out. Each follows the callback URL\'s rules and is matched exactly; a repeated URL counts once. Default empty; an edit that names the field replaces the whole list.',
  );

const clientType = z
  .enum(CLIENT_TYPES, { error: 'type must be confidential or public' })
  .describe(
    '`confidential` (the default): a server that keeps a client secret and authenticates with it at the token endpoint. `public`: a native or single-page application that cannot keep a secret: it gets none, its token requests carry only `client_id` (token_endpoint_auth_method `none`), and every authorization request must carry a PKCE `code_challenge` (S256). Fixed when the application is created.',
  );

const deviceFlow = z
  .boolean({ error: 'deviceFlow must be true or false' })
  .describe(
    'Enable Device Flow: the application may use the device authorization grant (RFC 8628, `POST /login/oauth/device/code`, then `grant_type=urn:ietf:params:oauth:grant-type:device_code` at the token endpoint) for devices without a browser. Off by default; while off, the device endpoint answers `unauthorized_client`.',
  );

const requirePushedAuthorizationRequests = z
  .boolean({ error: 'requirePushedAuthorizationRequests must be true or false' })
  .describe(
    'Require pushed authorization requests (RFC 9126): an authorization request is taken only as a `request_uri` from `POST /login/oauth/par`; a plain one is refused. Off by default.',
  );

// Back-channel logout (OpenID Connect Back-Channel Logout 1.0).

/**
 * Where logout tokens are POSTed when a session the application signed in through ends: the
 * callback's rules (https; http only on the loopback names), and no fragment (the specification's
 * rule). An empty string or null is none.
 */
const backchannelLogoutURL = z
  .string({ error: 'backchannelLogoutURL must be a URL, an empty string or null' })
  .trim()
  .max(MAX_URL_LENGTH, `backchannelLogoutURL must be at most ${MAX_URL_LENGTH} characters`)
  .superRefine((v, ctx) => {
    const problem = v === '' ? undefined : redirectUrlProblem(v);
    if (problem) ctx.addIssue({ code: 'custom', message: `backchannelLogoutURL ${problem}` });
  })
  .transform((v) => v || null)
  .nullable()
  .describe(
    'Back-channel logout URL (OpenID Connect Back-Channel Logout 1.0): when a session the application signed a person in through ends (signing out, signing out other sessions, an administrator disabling the account, a password reset, account deletion, RP-initiated logout), the service POSTs a signed `logout_token` (with `sub` and `sid`) here. https, or http only for localhost, 127.0.0.1 or [::1]; no fragment. Null or an empty string for none (the default).',
  )
  .meta({ format: 'uri' });
const clientCredentials = z
  .boolean({ error: 'clientCredentials must be true or false' })
  .describe(
    'Allow the application to act as itself: it may use the client credentials grant (RFC 6749 §4.4, `grant_type=client_credentials` with its client ID and secret) for an `ho_` token with no user, which reaches only its own group in this API (`groups:read-only`, or `groups:read-write` when it asks). Confidential applications only. Off by default; while off, the token endpoint answers `unauthorized_client`.',
  );

/** Why a public application cannot act as itself. */
export const PUBLIC_CLIENT_CREDENTIALS = 'clientCredentials cannot be on for a public application: it has no client secret to authenticate with';

/** The fields of an application, without the rules that tie one to another. */
const applicationFields = z.strictObject({
  name,
  homepageURL,
  description,
  callbackURL,
  signOutRedirectURLs: signOutRedirectURLs.default([]),
  type: clientType.default('confidential'),
  deviceFlow: deviceFlow.default(false),
  requirePushedAuthorizationRequests: requirePushedAuthorizationRequests.default(false),
  backchannelLogoutURL: backchannelLogoutURL.default(null),
  clientCredentials: clientCredentials.default(false),
});

/** A new OAuth application; an unknown field is an error. A public one's callback is not on localhost. */
export const newApplication = applicationFields.superRefine((app, ctx) => {
  const problem = app.type === 'public' ? publicCallbackProblem(app.callbackURL) : undefined;
  if (problem) ctx.addIssue({ code: 'custom', path: ['callbackURL'], message: problem });
  if (app.type === 'public' && app.clientCredentials) ctx.addIssue({ code: 'custom', path: ['clientCredentials'], message: PUBLIC_CLIENT_CREDENTIALS });
});

/**
 * An edit of an application names only the fields it changes. The defaults of the description ('')
 * and of the sign-out URLs ([]) and of the two switches (false) are dropped here: with them, an edit that leaves one out would
 * silently empty it. The type is not among them: a public client's tokens were issued without a
 * secret, so it stays what it was registered as. (The service checks a new callback against it.)
 */
export const applicationChanges = applicationFields
  .omit({ type: true })
  .partial()
  .extend({
    description: description.unwrap().optional(),
    signOutRedirectURLs: signOutRedirectURLs.optional(),
    deviceFlow: deviceFlow.optional(),
    requirePushedAuthorizationRequests: requirePushedAuthorizationRequests.optional(),
    backchannelLogoutURL: backchannelLogoutURL.optional(),
    clientCredentials: clientCredentials.optional(),
  });

/** A new client secret takes no options: an empty body, or `{}`. */
export const newSecret = z.strictObject({});

// Query strings of /apis/v2.

/**
 * A whole number as a query string or a command line writes it: decimal digits only, so a sign,
 * a point or an exponent makes it something else.
 */
export function wholeNumber(message?: string) {
  return z.string().regex(/^[0-9]+$/, message).transform(Number);
}

/** A query parameter: given at most once (twice reads as a list), and an empty value is the same as none. */
function queryParam<T extends z.ZodType<unknown, string | undefined>>(parameter: string, value: T) {
  return z
    .string({ error: `${parameter} must be given at most once` })
    .optional()
    .transform((raw) => raw || undefined)
    .pipe(value);
}

/** An integer query parameter from 1 to `max`, `fallback` when absent. */
function countParam(parameter: string, max: number, fallback: number) {
  const message = `${parameter} must be an integer from 1 to ${max}`;
  return queryParam(parameter, wholeNumber(message).pipe(z.int(message).min(1, message).max(max, message)).default(fallback));
}

/** The one pagination of every list. */
export const pageQuery = z.object({
  pageNumber: countParam('pageNumber', 1_000_000_000, 1),
  pageSize: countParam('pageSize', 50, 20),
});

/** An optional text query parameter of at most `maxLength` characters. */
export function queryText(parameter: string, maxLength: number) {
  return queryParam(parameter, z.string().max(maxLength, `${parameter} must be at most ${maxLength} characters`).optional());
}

/** How long a list's `filter` may be. */
export const MAX_FILTER_LENGTH = 100;

/**
 * Parses with a schema; on bad input throws one ValidationError naming every bad field (the first
 * problem of each, in the schema's order): its message joins them with "; " for the API and the
 * CLI, and its `problems` let a page show each next to its field.
 */
export function parse<T extends z.ZodType>(schema: T, input: unknown): z.infer<T> {
  const result = safeParse(schema, input);
  if (result.success) return result.data;
  throw invalidFields(problemsOf(result.error.issues));
}

/**
 * A parse whose issues keep the value each is about, so that `problemsOf` can tell a field left
 * out ("name is required") from one of the wrong type ("name must be a string"). The values stay
 * in the issues: no message repeats them.
 */
export function safeParse<T extends z.ZodType>(schema: T, input: unknown) {
  return schema.safeParse(input, { reportInput: true });
}

/** A ValidationError for problems found together (from `problemsOf`, or gathered by a service). */
export function invalidFields(problems: FieldProblem[]): ValidationError {
  const first = problems[0] ?? { field: 'body', message: 'the request is invalid' };
  return new ValidationError(first.field, problems.map((p) => p.message).join('; '), problems);
}

/** The bad input of a failed parse, as problems: the first of each field (of each item of a list field). */
export function problemsOf(issues: readonly z.core.$ZodIssue[]): FieldProblem[] {
  const seen = new Set<string>();
  const problems: FieldProblem[] = [];
  for (const issue of issues) {
    const problem = problemOfIssue(issue);
    const key = `${problem.field}[${problem.index ?? ''}]`;
    if (seen.has(key)) continue;
    seen.add(key);
    problems.push(problem);
  }
  return problems;
}

function problemOfIssue(issue: z.core.$ZodIssue): FieldProblem {
  if (issue.code === 'unrecognized_keys') {
    const unknown = issue.keys.map((k) => `"${k}"`).join(', ');
    if (!issue.path.length) return { field: issue.keys[0]!, message: `unknown field ${unknown}` };
    // An unknown field of an item (a resource's scope): the field it is in is the one named.
    const field = String(issue.path[0]);
    const index = typeof issue.path[1] === 'number' ? issue.path[1] : undefined;
    const message = `${index === undefined ? field : `${field}[${index}]`} has an unknown field ${unknown}`;
    return { field, index, problem: problemOf(field, message), message };
  }
  const field = issue.path.length ? String(issue.path[0]) : 'body';
  const index = typeof issue.path[1] === 'number' ? issue.path[1] : undefined;
  const named = index === undefined ? field : `${field}[${index}]`;
  const message = issue.code !== 'invalid_type' ? issue.message : issue.input === undefined ? `${named} is required` : wrongTypeMessage(issue, named);
  return { field, index, problem: problemOf(field, message), message };
}

/** The JSON types as a message names them. */
const TYPE_WORDS: Record<string, string> = { string: 'a string', number: 'a number', int: 'an integer', boolean: 'true or false', array: 'an array', object: 'an object' };

/**
 * A value of the wrong type: the schema's own words when they say what this field (or item) must
 * be ("signOutRedirectURLs must be a list of URLs"), else the type it must be ("name must be a
 * string", "credentials[2] must be a string"): never "is required", which a schema says of a
 * field left out, nor zod's default.
 */
function wrongTypeMessage(issue: z.core.$ZodIssueInvalidType, named: string): string {
  const ownWords = issue.message.startsWith(`${named} `) && !issue.message.endsWith(' is required');
  return ownWords ? issue.message : `${named} must be ${TYPE_WORDS[issue.expected] ?? `a ${issue.expected}`}`;
}

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;

/** A date and time of RFC 3339 (`2025-01-31T09:00:00Z`, `…+09:00`) as the instant it names, or undefined. */
export function parseRfc3339(value: string): string | undefined {
  const found = RFC3339.exec(value.toUpperCase());
  if (!found) return undefined;
  const [year, month, day, hour] = [Number(found[1]), Number(found[2]), Number(found[3]), Number(found[4])];
  // Date.parse rolls 31 February over into March and reads 24:00 as the next day.
  if (new Date(Date.UTC(year, month - 1, day)).getUTCDate() !== day || hour > 23) return undefined;
  // A leap second (:60) is the last second of its minute here.
  const ms = Date.parse(value.toUpperCase().replace(/^(.{17})60/, '$159'));
  return Number.isFinite(ms) ? new Date(ms).toISOString() : undefined;
}

function instantParam(parameter: string) {
  const message = `${parameter} must be a date and time of RFC 3339, such as 2025-01-31T09:00:00Z`;
  return queryParam(parameter, z.string().transform((raw, ctx) => {
    const instant = parseRfc3339(raw);
    if (instant === undefined) {
      ctx.addIssue({ code: 'custom', message });
      return z.NEVER;
    }
    return instant;
  }).optional());
}

/** The filters of an audit log: one action's code, and `since` ≤ time < `until`. */
export const auditQuery = z.object({
  action: queryParam('action', z.string().regex(/^[a-z][a-z0-9_.-]{0,63}$/, 'action must be the code of an audit action, such as member.add').optional()),
  since: instantParam('since'),
  until: instantParam('until'),
});
