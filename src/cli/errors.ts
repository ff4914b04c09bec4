import { z } from 'zod';
import { ConfigError } from '../config.js';
import { AppError, ValidationError } from '../errors.js';
import { KeysSecretError } from '../key-encryption.js';
import { isStorageOutage, outageStore } from '../storage.js';

/** The command line itself is wrong: an unknown command or flag, a missing value. */
export class UsageError extends Error {}

/** The flag each service field comes from, so that an error names what the person typed. */
const FLAG_OF_FIELD: Record<string, string> = {
  username: '--username',
  email: '--email',
  name: '--name',
  password: '--password-stdin',
  path: '--path',
  description: '--description',
  visibilityLevel: '--visibility',
  owner: '--owner',
  group: '--group',
  user: '--user',
  role: '--role',
  homepageURL: '--homepage-url',
  callbackURL: '--callback-url',
  signOutRedirectURLs: '--sign-out-url',
  backchannelLogoutURL: '--backchannel-logout-url',
  scopes: '--scope',
  identifier: '--identifier',
  tokenFormat: '--token-format',
  'scopes.0': '--scope',
  'scopes.1': '--scope',
  expiresInDays: '--expires-in-days',
};

export const EXIT_BAD_INPUT = 2;
export const EXIT_FAULT = 1;

/**
 * The one error path of the CLI: any failure becomes one line for stderr and an exit code.
 * Bad input and a bad environment are 2; anything else is a fault (1), still one line and
 * never a stack trace.
 */
export function describeFailure(err: unknown): { line: string; exitCode: number } {
  if (err instanceof UsageError || err instanceof ConfigError || err instanceof KeysSecretError) return badInput(err.message);
  if (err instanceof ValidationError) return badInput(err.problems.map((p) => withFlag(p.field, p.message)).join('; '));
  if (err instanceof AppError && err.status < 500) return badInput(err.message);
  if (err instanceof z.ZodError) {
    const issue = err.issues[0];
    return badInput(withFlag(issue?.path.map(String).join('.'), issue?.message ?? 'invalid input'));
  }
  const detail = (err instanceof Error ? err.message : '') || String(err);
  if (isStorageOutage(err)) {
    // The store's own words stay, after a sentence that says which store and what to check.
    const store = outageStore(err) === 'redis'
      ? 'Redis did not answer (REDIS_URL, REDIS_CLUSTER_NODES or REDIS_SENTINELS): this command changes what the running instances keep or cache there, so it needs their Redis'
      : 'the database did not answer (DATABASE_URL)';
    return { line: oneLine(`failed: ${store}; check that it is running and reachable from here (${detail})`), exitCode: EXIT_FAULT };
  }
  return { line: oneLine(`failed: ${detail}`), exitCode: EXIT_FAULT };
}

function badInput(message: string): { line: string; exitCode: number } {
  return { line: oneLine(message), exitCode: EXIT_BAD_INPUT };
}

function withFlag(field: string | undefined, message: string): string {
  const flag = field ? FLAG_OF_FIELD[field] : undefined;
  return flag ? `${flag}: ${message}` : message;
}

function oneLine(text: string): string {
  return text.replace(/\s*[\r\n]+\s*/g, ' ').trim();
}
