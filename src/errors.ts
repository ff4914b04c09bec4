/**
 * Typed errors of our own surfaces (pages, API, CLI). `expose` errors carry a message meant for the
 * person or program that sent the request; anything else is a fault, logged and shown as a 500
 * without detail. Protocol errors of the OAuth endpoints are oidc-provider's own.
 */
export class AppError extends Error {
  readonly status: number;
  readonly code: string;
  readonly expose = true;
  /** The input field the error is about, so a form can show it next to that field. */
  readonly field: string | undefined;

  constructor(status: number, code: string, message: string, field?: string) {
    super(message);
    this.status = status;
    this.code = code;
    this.field = field;
  }
}

/**
 * One bad input field. `message` is the sentence the API and the CLI give, naming the field as
 * they do ("homepageURL must be an absolute http(s) URL"); `problem`, when the message is
 * "<field> <problem>", is the part after the name, so that a page can put its own label in front
 * ("Homepage URL must be …"). `index` is the item of a list field ("signOutRedirectURLs[1]").
 */
export interface FieldProblem {
  field: string;
  index?: number;
  problem?: string;
  message: string;
}

/** The problem a message states about `field`, when it is "<field> <problem>" (or "<field>[i] <problem>"). */
export function problemOf(field: string, message: string): string | undefined {
  if (!message.startsWith(field)) return undefined;
  const rest = message.slice(field.length).replace(/^\[\d+\]/, '');
  return rest.startsWith(' ') ? rest.slice(1) : undefined;
}

/** Bad input: one field, or (from a schema) every bad field at once, each in `problems`. */
export class ValidationError extends AppError {
  readonly problems: FieldProblem[];

  constructor(field: string, message: string, problems?: FieldProblem[]) {
    super(400, 'invalid_request', message, field);
    this.problems = problems ?? [{ field, problem: problemOf(field, message), message }];
  }
}

export class ConflictError extends AppError {
  readonly problems: FieldProblem[];

  constructor(field: string, message: string) {
    super(409, 'conflict', message, field);
    this.problems = [{ field, problem: problemOf(field, message), message }];
  }
}

export class NotFoundError extends AppError {
  constructor(message = 'not found') {
    super(404, 'not_found', message);
  }
}

export class ForbiddenError extends AppError {
  constructor(message = 'you are not allowed to do this') {
    super(403, 'forbidden', message);
  }
}

export class UnauthenticatedError extends AppError {
  constructor(message = 'sign in first') {
    super(401, 'unauthenticated', message);
  }
}

/** Storage (database or Redis) is unreachable: a 503, and the service recovers when it returns. */
export class UnavailableError extends AppError {
  constructor(message = 'storage is unavailable, try again shortly') {
    super(503, 'temporarily_unavailable', message);
  }
}

/**
 * Come back later: a rate limit (429) or a full queue (503). `retryAfterS` becomes the
 * Retry-After header on every surface, and the message says the same in words.
 */
export class RetryLaterError extends AppError {
  /** `field`: the form field the wait is about, when a form has several that could be (`email`). */
  constructor(status: 429 | 503, code: string, message: string, readonly retryAfterS: number, field?: string) {
    super(status, code, message, field);
  }
}

const RELATIVE_TIMES = new Map<string, Intl.RelativeTimeFormat>();

/**
 * "in 3 minutes", "in 40 seconds": how long a person has to wait, rounded up, in `lang`'s words
 * ("in 3 Minuten", "3 分後") for the pages that are translated; English everywhere else.
 */
export function inWords(seconds: number, lang = 'en'): string {
  let words = RELATIVE_TIMES.get(lang);
  if (!words) RELATIVE_TIMES.set(lang, (words = new Intl.RelativeTimeFormat(lang, { numeric: 'always' })));
  if (seconds >= 90) return words.format(Math.ceil(seconds / 60), 'minute');
  if (seconds > 59) return words.format(1, 'minute');
  return words.format(Math.max(1, Math.ceil(seconds)), 'second');
}

const WINDOW_UNITS: Array<[number, string]> = [[86_400, 'day'], [3600, 'hour'], [60, 'minute'], [1, 'second']];

/** A limit's window as it is configured ("1 hour", "15 minutes", "90 seconds"): its largest whole unit. */
export function windowInWords(seconds: number): string {
  const [size, unit] = WINDOW_UNITS.find(([size]) => seconds % size === 0) ?? [1, 'second'];
  const count = seconds / size;
  return `${count} ${unit}${count === 1 ? '' : 's'}`;
}

/**
 * The refusal of a request past a counted limit, naming the limit as configured and the wait the
 * Retry-After header gives: "Too many requests: at most 5000 per 1 hour; retry after 120 seconds."
 */
export function tooManyRequests(what: string, limit: { points: number; durationS: number }, retryAfterS: number): RetryLaterError {
  const wait = `${retryAfterS} second${retryAfterS === 1 ? '' : 's'}`;
  return new RetryLaterError(429, 'rate_limited', `${what}: at most ${limit.points} per ${windowInWords(limit.durationS)}; retry after ${wait}.`, retryAfterS);
}
