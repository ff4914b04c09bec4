import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
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
    // Redis Cluster (seed nodes) or Sentinel (the sentinels, and the name of the master they watch),
    // instead of REDIS_URL; REDIS_PASSWORD is the data nodes' password in either.
    REDIS_CLUSTER_NODES: hostPorts(),
    REDIS_SENTINELS: hostPorts(),
    REDIS_SENTINEL_NAME: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, 'must be the master name the sentinels monitor (letters, digits, . _ -)').optional(),
    REDIS_PASSWORD: z.string().optional(),
    // How long a store may keep a request waiting before it counts as away (503 with Retry-After):
    // short enough that a stalled store answers within seconds, long enough for a busy one.
    DATABASE_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(3000),
    REDIS_TIMEOUT_MS: z.coerce.number().int().min(50).max(600_000).default(2000),
    // transaction: DATABASE_URL leads to a pooler (pgbouncer) that hands a server connection to a
    // client for one transaction only, so nothing may be tied to a session (see src/db/knex.ts).
    DATABASE_POOLING: z.enum(['session', 'transaction']).default('session'),
    SIGNUP: z.enum(['open', 'closed']).default('open'),
    // false: the sign-in pages offer only passkeys and the sign-in providers (the CLI still makes accounts with a password).
    PASSWORD_SIGN_IN: z.enum(['true', 'false']).default('true'),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    TRUST_PROXY: z.coerce.number().int().min(0).max(10).default(0),
    KEYS_SECRET: z.string().min(32, 'must be at least 32 characters (e.g. `openssl rand -base64 32`)').optional(),
    RATE_LIMIT_SIGNIN_ACCOUNT_IP: rateLimit('5/15m'),
    RATE_LIMIT_SIGNIN_IP: rateLimit('50/1h'),
    RATE_LIMIT_SIGNIN_ACCOUNT: rateLimit('20/1h'),
    RATE_LIMIT_SIGNUP_IP: rateLimit('10/1h'),
    RATE_LIMIT_CLIENT_REGISTRATION_IP: rateLimit('20/1h'),
    RATE_LIMIT_CLIENT_AUTH: rateLimit('10/1m'),
    RATE_LIMIT_API_TOKEN: rateLimit('5000/1h'),
    RATE_LIMIT_VERIFY_EMAIL: rateLimit('5/1h'),
    RATE_LIMIT_RESET_EMAIL: rateLimit('3/1h'),
    RATE_LIMIT_RESET_IP: rateLimit('20/1h'),
    RATE_LIMIT_CREDENTIAL_REPORTS_IP: rateLimit('60/1h'),
    // Device user codes tried at /login/device: 8 characters are safe only with a limit (RFC 8628 §5.1).
    RATE_LIMIT_DEVICE_CODE_BROWSER: rateLimit('10/15m'),
    RATE_LIMIT_DEVICE_CODE_IP: rateLimit('10/15m'),
    RATE_LIMIT_VERIFY_ADDRESS: rateLimit('5/1h'),
    // Half the cores by default: Argon2id keeps a core busy per hash, and the other half must stay
    // free for token exchanges and API calls while a flood of sign-ins waits in the queue.
    KDF_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(Math.max(1, Math.floor(availableParallelism() / 2))),
    KDF_QUEUE: z.coerce.number().int().min(0).max(10_000).default(32),
    SMTP_URL: z
      .string()
      .optional()
      .refine((v) => v === undefined || isSmtpUrl(v), { message: 'must be smtp://[user:password@]host[:port] or smtps://…' }),
    MAIL_FROM: z.string().min(3).max(200).optional(),
    MAIL_DIR: z.string().min(1).default('./data/mail'),
    REQUIRE_VERIFIED_EMAIL: z.enum(['true', 'false']).default('true'),
    // Unset: no metrics listener. 0: a free port the system picks (logged at start).
    METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
    METRICS_HOST: z.string().min(1).default('127.0.0.1'),
    SHUTDOWN_TIMEOUT_S: z.coerce.number().int().min(1).max(3600).default(10),
    // Unset: 5 s when NODE_ENV=production (a load balancer's time to see /readyz turn 503), else 0.
    SHUTDOWN_DELAY_S: z.coerce.number().int().min(0).max(3600).optional(),
    // Longer than relying parties cache the JWKS: a rotated key signs only once they can have it.
    KEY_ACTIVATION_DELAY_S: z.coerce.number().int().min(0).max(30 * 86_400).default(3600),
    // The device authorization grant: how long a user code may be entered, and how often the device may poll.
    DEVICE_CODE_TTL_S: z.coerce.number().int().min(1).max(86_400).default(600),
    DEVICE_POLL_INTERVAL_S: z.coerce.number().int().min(1).max(60).default(5),
    // Webhook deliveries to private, loopback and link-local addresses (refused by default: SSRF).
    WEBHOOKS_ALLOW_PRIVATE: z.enum(['true', 'false']).default('false'),
    CLIENT_METADATA_ALLOW_PRIVATE: z.enum(['true', 'false']).default('false'),
    CLIENT_METADATA_CA_FILE: z
      .string()
      .optional()
      .transform((path, ctx) => {
        if (!path) return undefined;
        try {
          const pem = readFileSync(path, 'utf8');
          if (!pem.includes('-----BEGIN CERTIFICATE-----')) throw new Error('no PEM certificate in it');
          return pem;
        } catch (err) {
          ctx.addIssue({ code: 'custom', message: `must be a readable PEM file of CA certificates (${(err as Error).message})` });
          return z.NEVER;
        }
      }),
    // The wait before a failed delivery's first retry (each next one waits twice as long, at most an hour).
    WEBHOOKS_RETRY_MS: z.coerce.number().int().min(10).max(3_600_000).default(30_000),
    // How often each instance looks for deliveries that are due.
    WEBHOOKS_POLL_MS: z.coerce.number().int().min(10).max(60_000).default(1000),
    // The longest one delivery attempt may take, connection to last byte.
    WEBHOOKS_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(10_000),
    // How often the accounts linked to each directory (LDAP) are checked against it; 0: only at sign-in.
    DIRECTORY_CHECK_INTERVAL_S: z.coerce.number().int().min(0).max(86_400).default(900),
  })
  .superRefine((env, ctx) => {
    if (env.NODE_ENV === 'production' && env.ISSUER && !env.ISSUER.startsWith('https://')) {
      ctx.addIssue({ code: 'custom', path: ['ISSUER'], message: 'must be an https:// URL when NODE_ENV=production' });
    }
    if (env.NODE_ENV === 'production' && !env.ISSUER) {
      ctx.addIssue({ code: 'custom', path: ['ISSUER'], message: 'must be set (https://…) when NODE_ENV=production' });
    }
    if (env.NODE_ENV === 'production' && !env.KEYS_SECRET) {
      ctx.addIssue({ code: 'custom', path: ['KEYS_SECRET'], message: 'must be set when NODE_ENV=production (it encrypts the signing and cookie keys at rest)' });
    }
    const topologies = (['REDIS_URL', 'REDIS_CLUSTER_NODES', 'REDIS_SENTINELS'] as const).filter((name) => env[name] !== undefined);
    if (topologies.length > 1) {
      ctx.addIssue({ code: 'custom', path: [topologies[1]!], message: `cannot be set together with ${topologies[0]}: choose one Redis topology (REDIS_URL, REDIS_CLUSTER_NODES or REDIS_SENTINELS)` });
    }
    if (env.REDIS_SENTINELS && !env.REDIS_SENTINEL_NAME) {
      ctx.addIssue({ code: 'custom', path: ['REDIS_SENTINEL_NAME'], message: 'must be set when REDIS_SENTINELS is (the master name the sentinels monitor, e.g. mymaster)' });
    }
    if (env.REDIS_SENTINEL_NAME && !env.REDIS_SENTINELS) {
      ctx.addIssue({ code: 'custom', path: ['REDIS_SENTINEL_NAME'], message: 'is only read with REDIS_SENTINELS' });
    }
    if (env.REDIS_PASSWORD !== undefined && !env.REDIS_CLUSTER_NODES && !env.REDIS_SENTINELS) {
      ctx.addIssue({ code: 'custom', path: ['REDIS_PASSWORD'], message: 'is only read with REDIS_CLUSTER_NODES or REDIS_SENTINELS (a single server takes its password in REDIS_URL: redis://:password@host:port)' });
    }
    if (env.METRICS_PORT !== undefined && env.METRICS_PORT !== 0 && env.METRICS_PORT === env.PORT) {
      ctx.addIssue({ code: 'custom', path: ['METRICS_PORT'], message: 'must differ from PORT: metrics are served on a listener of their own, never on the public port' });
    }
  });

/** A limit written as `<count>/<window>` (`5/15m`, `5000/1h`; units s, m, h, d), or `off`. */
export interface RateLimit {
  points: number;
  durationS: number;
}

const UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };

function rateLimit(fallback: string) {
  return z
    .string()
    .default(fallback)
    .transform((value, ctx): RateLimit | null => {
      if (value === 'off') return null;
      const match = /^([1-9][0-9]{0,8})\/([1-9][0-9]{0,5})([smhd])$/.exec(value);
      if (!match) {
        ctx.addIssue({ code: 'custom', message: 'must be <count>/<window> such as 5/15m or 5000/1h (units s, m, h, d), or off' });
        return z.NEVER;
      }
      return { points: Number(match[1]), durationS: Number(match[2]) * UNITS[match[3]!]! };
    });
}

/** A network address of a Redis node or sentinel. */
export interface HostPort {
  host: string;
  port: number;
}

/**
 * Where the service's Redis is: one server (a URL, database number included), a Cluster (any of
 * its nodes; the others are discovered), or the master a group of Sentinels points at.
 */
export type RedisTopology =
  | { kind: 'single'; url: string }
  | { kind: 'cluster'; nodes: HostPort[]; password: string | undefined }
  | { kind: 'sentinel'; sentinels: HostPort[]; name: string; password: string | undefined };

const HOST_PORT = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9.-]+)):([0-9]{1,5})$/;

/** `host:port,host:port,…` (`[::1]:7000` for an IPv6 address); the first bad entry is named. */
function hostPorts() {
  return z
    .string()
    .optional()
    .transform((value, ctx): HostPort[] | undefined => {
      if (value === undefined) return undefined;
      const entries = value.split(',').map((entry) => entry.trim());
      const nodes: HostPort[] = [];
      for (const entry of entries) {
        const match = HOST_PORT.exec(entry);
        const port = Number(match?.[3]);
        if (!match || port < 1 || port > 65535) {
          ctx.addIssue({ code: 'custom', message: `entry ${JSON.stringify(entry)} is not host:port (a comma-separated list such as 10.0.0.1:6379,10.0.0.2:6379)` });
          return z.NEVER;
        }
        nodes.push({ host: match[1] ?? match[2]!, port });
      }
      return nodes;
    });
}

/** An absolute URL with one of `protocols` and a host name. */
function isUrlOf(value: string, protocols: string[]): boolean {
  try {
    const url = new URL(value);
    return protocols.includes(url.protocol) && url.hostname !== '';
  } catch {
    return false;
  }
}

const isPostgresUrl = (value: string) => isUrlOf(value, ['postgres:', 'postgresql:']);
const isRedisUrl = (value: string) => isUrlOf(value, ['redis:', 'rediss:']);
const isSmtpUrl = (value: string) => isUrlOf(value, ['smtp:', 'smtps:']);

export interface Config {
  env: 'development' | 'production' | 'test';
  port: number;
  host: string;
  issuer: string;
  databaseUrl: string;
  /** undefined: no Redis; everything lives in the SQL database. */
  redis: RedisTopology | undefined;
  /**
   * The longest the database may take to connect, hand out a pooled connection or answer one
   * statement before the request answers 503; a connection that leaves a statement unanswered is
   * dropped.
   */
  databaseTimeoutMs: number;
  /**
   * session: PostgreSQL directly (or a pooler that keeps one server connection per client), and the
   * statement limits are sent when connecting. transaction: through a transaction-pooling
   * pgbouncer; nothing is sent that would outlive a transaction (no startup parameters, no named
   * prepared statements), and the server-side limits are the database role's own settings.
   */
  databasePooling: 'session' | 'transaction';
  /** The longest Redis may take to connect or answer one command; a connection that stalls is dropped and reopened. */
  redisTimeoutMs: number;
  signup: 'open' | 'closed';
  /** Whether the sign-in pages take a password (PASSWORD_SIGN_IN). */
  passwordSignIn: boolean;
  logLevel: string;
  /** How many proxy hops' X-Forwarded-For / X-Forwarded-Proto are believed (0: none). */
  trustProxy: number;
  /** Encrypts signing and cookie keys at rest; required in production. */
  keysSecret: string | undefined;
  /** null: that limit is off. */
  rateLimits: {
    signinAccountIp: RateLimit | null;
    signinIp: RateLimit | null;
    signinAccount: RateLimit | null;
    signupIp: RateLimit | null;
    /** Clients registered (a metadata document fetched, or a dynamic registration) per address. */
    clientRegistrationIp: RateLimit | null;
    clientAuth: RateLimit | null;
    apiToken: RateLimit | null;
    /** Verification mails (and word that someone tried to use its address) for one account. */
    verifyEmail: RateLimit | null;
    /** Password-reset requests for one address, and from one client address. */
    resetEmail: RateLimit | null;
    resetIp: RateLimit | null;
    /** Reports of leaked credentials (POST /apis/v2/credentials/revoke) from one client address. */
    credentialReportsIp: RateLimit | null;
    /** Device user codes entered at /login/device by one browser, and from one client address. */
    deviceCodeBrowser: RateLimit | null;
    deviceCodeIp: RateLimit | null;
    /**
     * Mails to one address that prove it (sign-up, e-mail change, Resend) or tell its owner that
     * someone tried to use it, whether or not an account has it.
     */
    verifyAddress: RateLimit | null;
  };
  /** Password hashing: at most `concurrency` at once per instance, at most `queue` waiting; past that, 503. */
  kdf: { concurrency: number; queue: number };
  /** Outgoing mail: SMTP when `smtpUrl` is set, otherwise `.eml` files in `dir`. */
  mail: { smtpUrl: string | undefined; from: string; dir: string };
  /** Refuse the authorization flow to accounts whose e-mail address is not verified (the default). */
  requireVerifiedEmail: boolean;
  /** Where GET /metrics (Prometheus) listens; undefined: nowhere. */
  metrics: { host: string; port: number } | undefined;
  /** On SIGTERM or SIGINT, how long requests in flight may take to finish before they are cut. */
  shutdownTimeoutS: number;
  /**
   * On SIGTERM or SIGINT, how long the service goes on accepting and answering requests (each with
   * `Connection: close`, /readyz 503) before it stops accepting and closes idle connections.
   */
  shutdownDelayS: number;
  /** How long after `idp keys rotate` the new key starts signing (it is published at once). */
  keyActivationDelayS: number;
  /**
   * The device authorization grant (RFC 8628): a device code and its user code last `codeTtlS`;
   * the device polls the token endpoint at most once every `pollIntervalS` (faster is `slow_down`).
   */
  deviceFlow: { codeTtlS: number; pollIntervalS: number };
  /**
   * Webhook deliveries: whether private and loopback targets are allowed, the wait before the
   * first retry (doubling each time, for 24 hours), how often the outbox is looked at, and the
   * longest one attempt may take.
   */
  /**
   * Client ID Metadata Documents may be fetched from private and loopback addresses, and http://
   * loopback client ids are accepted (CLIENT_METADATA_ALLOW_PRIVATE): for development and tests.
   */
  clientMetadata: { allowPrivate: boolean; /** CLIENT_METADATA_CA_FILE: CA certificates trusted, beside the system's, when fetching documents (a company's own CA). */ ca: string | undefined };
  webhooks: { allowPrivate: boolean; retryMs: number; pollMs: number; timeoutMs: number };
  /**
   * DIRECTORY_CHECK_INTERVAL_S: every so often, one instance asks each directory (LDAP) provider
   * for every person linked to it, and disables the accounts of those it no longer finds or marks
   * disabled (0: only at their next sign-in).
   */
  directoryCheckIntervalS: number;
}

export class ConfigError extends Error {}


/** Every environment variable the service reads (docs/configuration.md describes each). */
export const CONFIG_VARIABLES: readonly string[] = Object.keys(schema.shape);

/** Never echoed, not even in the error about their own value. */
const SECRET_VARIABLES = new Set(['KEYS_SECRET', 'REDIS_PASSWORD']);

/** Parses the environment; throws a ConfigError whose message is one line naming the variable. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const input: Record<string, string | undefined> = {};
  for (const key of CONFIG_VARIABLES) {
    const value = env[key];
    if (value !== undefined && value !== '') input[key] = value;
  }
  const parsed = schema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const name = String(issue.path[0] ?? 'environment');
    const shown = SECRET_VARIABLES.has(name) ? '"***"' : JSON.stringify(masked(input[name] ?? ''));
    throw new ConfigError(`${name}=${shown} is invalid: ${describe(issue)}`);
  }
  const e = parsed.data;
  const issuer = (e.ISSUER ?? `http://localhost:${e.PORT}`).replace(/\/+$/, '');
  return {
    env: e.NODE_ENV,
    port: e.PORT,
    host: e.HOST,
    issuer,
    databaseUrl: e.DATABASE_URL,
    redis: redisTopology(e),
    databaseTimeoutMs: e.DATABASE_TIMEOUT_MS,
    databasePooling: e.DATABASE_POOLING,
    redisTimeoutMs: e.REDIS_TIMEOUT_MS,
    signup: e.SIGNUP,
    passwordSignIn: e.PASSWORD_SIGN_IN === 'true',
    logLevel: e.LOG_LEVEL,
    trustProxy: e.TRUST_PROXY,
    keysSecret: e.KEYS_SECRET,
    rateLimits: {
      signinAccountIp: e.RATE_LIMIT_SIGNIN_ACCOUNT_IP,
      signinIp: e.RATE_LIMIT_SIGNIN_IP,
      signinAccount: e.RATE_LIMIT_SIGNIN_ACCOUNT,
      signupIp: e.RATE_LIMIT_SIGNUP_IP,
      clientRegistrationIp: e.RATE_LIMIT_CLIENT_REGISTRATION_IP,
      clientAuth: e.RATE_LIMIT_CLIENT_AUTH,
      apiToken: e.RATE_LIMIT_API_TOKEN,
      verifyEmail: e.RATE_LIMIT_VERIFY_EMAIL,
      resetEmail: e.RATE_LIMIT_RESET_EMAIL,
      resetIp: e.RATE_LIMIT_RESET_IP,
      credentialReportsIp: e.RATE_LIMIT_CREDENTIAL_REPORTS_IP,
      deviceCodeBrowser: e.RATE_LIMIT_DEVICE_CODE_BROWSER,
      deviceCodeIp: e.RATE_LIMIT_DEVICE_CODE_IP,
      verifyAddress: e.RATE_LIMIT_VERIFY_ADDRESS,
    },
    kdf: { concurrency: e.KDF_CONCURRENCY, queue: e.KDF_QUEUE },
    mail: {
      smtpUrl: e.SMTP_URL,
      from: e.MAIL_FROM ?? defaultSender(issuer),
      dir: e.MAIL_DIR,
    },
    requireVerifiedEmail: e.REQUIRE_VERIFIED_EMAIL === 'true',
    metrics: e.METRICS_PORT === undefined ? undefined : { host: e.METRICS_HOST, port: e.METRICS_PORT },
    shutdownTimeoutS: e.SHUTDOWN_TIMEOUT_S,
    shutdownDelayS: e.SHUTDOWN_DELAY_S ?? (e.NODE_ENV === 'production' ? 5 : 0),
    keyActivationDelayS: e.KEY_ACTIVATION_DELAY_S,
    deviceFlow: { codeTtlS: e.DEVICE_CODE_TTL_S, pollIntervalS: e.DEVICE_POLL_INTERVAL_S },
    clientMetadata: { allowPrivate: e.CLIENT_METADATA_ALLOW_PRIVATE === 'true', ca: e.CLIENT_METADATA_CA_FILE },
    webhooks: { allowPrivate: e.WEBHOOKS_ALLOW_PRIVATE === 'true', retryMs: e.WEBHOOKS_RETRY_MS, pollMs: e.WEBHOOKS_POLL_MS, timeoutMs: e.WEBHOOKS_TIMEOUT_MS },
    directoryCheckIntervalS: e.DIRECTORY_CHECK_INTERVAL_S,
  };
}

function redisTopology(e: z.infer<typeof schema>): RedisTopology | undefined {
  if (e.REDIS_URL) return { kind: 'single', url: e.REDIS_URL };
  if (e.REDIS_CLUSTER_NODES) return { kind: 'cluster', nodes: e.REDIS_CLUSTER_NODES, password: e.REDIS_PASSWORD };
  if (e.REDIS_SENTINELS) return { kind: 'sentinel', sentinels: e.REDIS_SENTINELS, name: e.REDIS_SENTINEL_NAME!, password: e.REDIS_PASSWORD };
  return undefined;
}

/** no-reply@ the issuer's host name (an address needs a name, so an IP issuer gets localhost). */
function defaultSender(issuer: string): string {
  const host = new URL(issuer).hostname;
  return `Horizon ID <no-reply@${/[a-z]/i.test(host) && !host.startsWith('[') ? host : 'localhost'}>`;
}

/** A URL's password never reaches stderr or a log line, even in an error about that URL. */
function masked(value: string): string {
  return value.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/@]*:)[^@/]*@/i, '$1***@');
}

const RANGES: Record<string, string> = {
  PORT: 'must be a port number from 0 to 65535',
  METRICS_PORT: 'must be a port number from 0 to 65535',
  TRUST_PROXY: 'must be a number of proxy hops from 0 to 10',
  KDF_CONCURRENCY: 'must be a whole number from 1 to 64',
  KDF_QUEUE: 'must be a whole number from 0 to 10000',
  SHUTDOWN_TIMEOUT_S: 'must be a whole number of seconds from 1 to 3600',
  SHUTDOWN_DELAY_S: 'must be a whole number of seconds from 0 to 3600',
  KEY_ACTIVATION_DELAY_S: 'must be a whole number of seconds from 0 to 2592000 (30 days)',
  DEVICE_CODE_TTL_S: 'must be a whole number of seconds from 1 to 86400',
  DEVICE_POLL_INTERVAL_S: 'must be a whole number of seconds from 1 to 60',
  DATABASE_TIMEOUT_MS: 'must be a number of milliseconds from 100 to 600000',
  REDIS_TIMEOUT_MS: 'must be a number of milliseconds from 50 to 600000',
  WEBHOOKS_RETRY_MS: 'must be a number of milliseconds from 10 to 3600000',
  WEBHOOKS_POLL_MS: 'must be a number of milliseconds from 10 to 60000',
  WEBHOOKS_TIMEOUT_MS: 'must be a number of milliseconds from 100 to 60000',
  DIRECTORY_CHECK_INTERVAL_S: 'must be a whole number of seconds from 0 (only at sign-in) to 86400',
};

function describe(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case 'invalid_value':
      return `must be one of ${issue.values.map((v) => String(v)).join(', ')}`;
    case 'invalid_type':
      return `must be a ${issue.expected}`;
    case 'too_small':
    case 'too_big':
      return RANGES[String(issue.path[0])] ?? issue.message;
    case 'invalid_format':
      return 'must be an absolute http(s) URL';
    default:
      return issue.message;
  }
}
