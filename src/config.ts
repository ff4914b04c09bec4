import { z } from 'zod';

/**
 * The whole configuration of the service, read once from the environment at start.
 * This is the only module that reads process.env.
 */
const schema = z
  .object({
    NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
    PORT: z.coerce.number().int().min(0).max(65535).default(3000),
    HOST: z.string().min(1).default('127.0.0.1'),
    ISSUER: z.url({ protocol: /^https?$/ }).optional(),
    DATABASE_URL: z
      .string()
      .default('sqlite:./data/idp.sqlite3')
      .refine((v) => /^sqlite:.+/.test(v) || isPostgresUrl(v), {
        message: 'must be sqlite:<file> or postgres://user@host:port/database',
      }),
    REDIS_URL: z
      .string()
      .optional()
      .transform((v) => (v === '' ? undefined : v))
      .refine((v) => v === undefined || isRedisUrl(v), { message: 'must be redis://host:port[/db]' }),
    SIGNUP: z.enum(['open', 'closed']).default('open'),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  })
  .superRefine((env, ctx) => {
    if (env.NODE_ENV === 'production' && env.ISSUER && !env.ISSUER.startsWith('https://')) {
      ctx.addIssue({ code: 'custom', path: ['ISSUER'], message: 'must be an https:// URL when NODE_ENV=production' });
    }
    if (env.NODE_ENV === 'production' && !env.ISSUER) {
      ctx.addIssue({ code: 'custom', path: ['ISSUER'], message: 'must be set (https://…) when NODE_ENV=production' });
    }
  });

function isPostgresUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'postgres:' || url.protocol === 'postgresql:') && url.hostname !== '';
  } catch {
    return false;
  }
}

function isRedisUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'redis:' || url.protocol === 'rediss:') && url.hostname !== '';
  } catch {
    return false;
  }
}

export interface Config {
  env: 'development' | 'production' | 'test';
  port: number;
  host: string;
  issuer: string;
  databaseUrl: string;
  redisUrl: string | undefined;
  signup: 'open' | 'closed';
  logLevel: string;
}

export class ConfigError extends Error {}

/** Parses the environment; throws a ConfigError whose message is one line naming the variable. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const input: Record<string, string | undefined> = {};
  for (const key of ['NODE_ENV', 'PORT', 'HOST', 'ISSUER', 'DATABASE_URL', 'REDIS_URL', 'SIGNUP', 'LOG_LEVEL']) {
    const value = env[key];
    if (value !== undefined && value !== '') input[key] = value;
  }
  const parsed = schema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const name = String(issue.path[0] ?? 'environment');
    throw new ConfigError(`${name}=${JSON.stringify(masked(input[name] ?? ''))} is invalid: ${describe(issue)}`);
  }
  const e = parsed.data;
  return {
    env: e.NODE_ENV,
    port: e.PORT,
    host: e.HOST,
    issuer: (e.ISSUER ?? `http://localhost:${e.PORT}`).replace(/\/+$/, ''),
    databaseUrl: e.DATABASE_URL,
    redisUrl: e.REDIS_URL,
    signup: e.SIGNUP,
    logLevel: e.LOG_LEVEL,
  };
}

/** A URL's password never reaches stderr or a log line, even in an error about that URL. */
function masked(value: string): string {
  return value.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/@]*:)[^@/]*@/i, '$1***@');
}

function describe(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case 'invalid_value':
      return `must be one of ${issue.values.map((v) => String(v)).join(', ')}`;
    case 'invalid_type':
      return `must be a ${issue.expected}`;
    case 'too_small':
    case 'too_big':
      return issue.path[0] === 'PORT' ? 'must be a port number from 0 to 65535' : issue.message;
    case 'invalid_format':
      return 'must be an absolute http(s) URL';
    default:
      return issue.message;
  }
}
