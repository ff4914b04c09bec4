import { hash } from 'node:crypto';
import type { Knex } from 'knex';
import {
  RateLimiterPostgres,
  RateLimiterRedis,
  RateLimiterRes,
  RateLimiterSQLite,
  type RateLimiterAbstract,
} from 'rate-limiter-flexible';
import type { Config, RateLimit } from '../config.js';
import { RATE_LIMITS_TABLE } from '../db/rate-limits.js';
import { inWords, RetryLaterError } from '../errors.js';
import { noMetrics, type Metrics } from '../metrics.js';
import type { RedisClient } from '../storage.js';

/**
 * The abuse limits, with rate-limiter-flexible. Counters live where every instance sees them:
 * Redis when the service has it, the SQL database otherwise (the `rate_limits` table). A limit
 * set to `off` never refuses anything.
 *
 * Sign-in failures are counted three ways:
 * - one account from one address: after the limit, that pair is blocked for a minute, and every
 *   further failure doubles the delay (a right password is refused too while blocked);
 * - one address, any accounts: refused for the rest of the window;
 * - one account, any addresses: no hard lockout (a stranger could use it against the owner), the
 *   account's sign-in slows to one try a minute instead.
 */

/** The first block after too many failures of one account from one address; each further one doubles it. */
const FIRST_DELAY_S = 60;
const MAX_DELAY_S = 24 * 60 * 60;
/** How long the doubling remembers earlier blocks. */
const STRIKES_WINDOW_S = 24 * 60 * 60;
const SLOW_ACCOUNT_EVERY_S = 60;

export interface ApiAllowance {
  limit: number;
  remaining: number;
  used: number;
  /** When the window resets, in seconds since the epoch. */
  resetAt: number;
}

/** One API request counted: whether it is within the allowance, and where the token stands. */
export interface ApiVerdict {
  allowed: boolean;
  allowance: ApiAllowance;
  retryAfterS: number;
}

type Store = (options: { keyPrefix: string; points: number; duration: number }) => RateLimiterAbstract;

function storeOf(config: Config, db: Knex, redis: RedisClient | undefined, redisKeyPrefix: string): Store {
  if (redis) return (o) => new RateLimiterRedis({ storeClient: redis, ...o, keyPrefix: `${redisKeyPrefix}rl:${o.keyPrefix}` });
  const sql = { storeClient: db, storeType: 'knex', tableName: RATE_LIMITS_TABLE, tableCreated: true, clearExpiredByTimeout: false };
  return config.databaseUrl.startsWith('postgres') ? (o) => new RateLimiterPostgres({ ...sql, ...o }) : (o) => new RateLimiterSQLite({ ...sql, ...o });
}

/** Keys are bounded and carry no personal data in clear: a login or client id is digested. */
function key(...parts: string[]): string {
  return hash('sha256', parts.join('\u0000'), 'base64url');
}

/** The result of `consume` whether it was allowed or refused; store failures (outages) are thrown. */
async function consume(limiter: RateLimiterAbstract, k: string, points = 1): Promise<{ allowed: boolean; res: RateLimiterRes }> {
  try {
    return { allowed: true, res: await limiter.consume(k, points) };
  } catch (err) {
    if (err instanceof RateLimiterRes) return { allowed: false, res: err };
    throw err;
  }
}

function retryAfterS(res: RateLimiterRes): number {
  return Math.max(1, Math.ceil(res.msBeforeNext / 1000));
}

/** One sign-in attempt's counter keys, and what the account+address counter stood at when it began. */
export interface SignInAttempt {
  pair: string;
  ip: string;
  account: string;
  pairCount: number;
}

/** A limiter and the number of points it allows per window. */
interface Counter {
  limiter: RateLimiterAbstract;
  points: number;
}

/**
 * A counter's points taken in its window (0 when it has none). On Redis the counter is a plain
 * integer key: one GET, where the library's own read sends MULTI, GET, PTTL and EXEC. This read
 * runs before every client authentication, so it is the hot one.
 */
async function pointsOf(redis: RedisClient | undefined, limiter: RateLimiterAbstract, k: string): Promise<number> {
  if (!redis) return (await limiter.get(k))?.consumedPoints ?? 0;
  const points = await redis.get(limiter.getKey(k));
  return points === null ? 0 : Number(points);
}

function tooManySignIns(seconds: number): RetryLaterError {
  return new RetryLaterError(429, 'rate_limited', `Too many failed sign-in attempts. Try again ${inWords(seconds)}.`, seconds);
}

function tooManyMails(seconds: number): RetryLaterError {
  return new RetryLaterError(429, 'rate_limited', `Too many e-mails were asked for. Try again ${inWords(seconds)}.`, seconds);
}

export class Limits {
  private readonly signinAccountIp?: { failures: RateLimiterAbstract; strikes: RateLimiterAbstract; points: number };
  private readonly signinIp?: Counter;
  private readonly signinAccount?: { failures: RateLimiterAbstract; slow: RateLimiterAbstract; points: number };
  private readonly signup?: Counter;
  private readonly clientAuth?: Counter;
  private readonly apiToken?: Counter;
  private readonly verifyEmail?: Counter;
  private readonly resetEmail?: Counter;
  private readonly resetIp?: Counter;
  private readonly devicePoll: RateLimiterAbstract;
  private readonly credentialReportsIp?: Counter;
  private readonly redis: RedisClient | undefined;
  private readonly verifyAddress?: Counter;

  /** `metrics` counts each refusal by the limit's name (the counter's prefix: `signin-ip`, `api-token`, …). */
  constructor(config: Config, db: Knex, redis: RedisClient | undefined, redisKeyPrefix = 'idp:', private readonly metrics: Pick<Metrics, 'rateLimited'> = noMetrics) {
    const store = storeOf(config, db, redis, redisKeyPrefix);
    this.redis = redis;
    const limits = config.rateLimits;
    const make = (name: string, limit: RateLimit) => store({ keyPrefix: name, points: limit.points, duration: limit.durationS });
    const counter = (name: string, limit: RateLimit): Counter => ({ limiter: make(name, limit), points: limit.points });
    if (limits.signinAccountIp) {
      this.signinAccountIp = {
        failures: make('signin-account-ip', limits.signinAccountIp),
        strikes: store({ keyPrefix: 'signin-strikes', points: 1_000_000, duration: STRIKES_WINDOW_S }),
        points: limits.signinAccountIp.points,
      };
    }
    if (limits.signinIp) this.signinIp = counter('signin-ip', limits.signinIp);
    if (limits.signinAccount) {
      this.signinAccount = {
        failures: make('signin-account', limits.signinAccount),
        slow: store({ keyPrefix: 'signin-account-slow', points: 1, duration: SLOW_ACCOUNT_EVERY_S }),
        points: limits.signinAccount.points,
      };
    }
    if (limits.signupIp) this.signup = counter('signup-ip', limits.signupIp);
    if (limits.clientAuth) this.clientAuth = counter('client-auth', limits.clientAuth);
    if (limits.apiToken) this.apiToken = counter('api-token', limits.apiToken);
    if (limits.verifyEmail) this.verifyEmail = counter('verify-email', limits.verifyEmail);
    if (limits.resetEmail) this.resetEmail = counter('reset-email', limits.resetEmail);
    if (limits.resetIp) this.resetIp = counter('reset-ip', limits.resetIp);
    // Not a limit one turns off: RFC 8628's polling interval, which the device is told.
    this.devicePoll = store({ keyPrefix: 'device-poll', points: 1, duration: config.deviceFlow.pollIntervalS });
    if (limits.credentialReportsIp) this.credentialReportsIp = counter('credential-reports-ip', limits.credentialReportsIp);
    if (limits.verifyAddress) this.verifyAddress = counter('verify-address', limits.verifyAddress);
  }

  /**
   * Before a password is checked: throws a 429 when this account and address are blocked, when
   * the address has failed too often, or when the account is slowed down and tried within the
   * minute. The attempt takes its point from the account+address and address counters now, not
   * after the password: 16 guesses sent at once are counted as 16 before any is checked, so no
   * more get through than the limit allows. A right password gives the points back.
   */
  async beforeSignIn(account: string, ip: string): Promise<SignInAttempt> {
    const attempt: SignInAttempt = { pair: key(account, ip), ip: key(ip), account: key(account), pairCount: 0 };
    const [pair, address, failures] = await Promise.all([
      this.signinAccountIp ? consume(this.signinAccountIp.failures, attempt.pair) : undefined,
      this.signinIp ? consume(this.signinIp.limiter, attempt.ip) : undefined,
      this.signinAccount ? pointsOf(this.redis, this.signinAccount.failures, attempt.account) : undefined,
    ]);
    attempt.pairCount = pair?.res.consumedPoints ?? 0;
    for (const [name, taken] of [['signin-account-ip', pair], ['signin-ip', address]] as const) {
      if (taken && !taken.allowed) throw this.refused(name, tooManySignIns(retryAfterS(taken.res)));
    }
    if (this.signinAccount && failures !== undefined && failures >= this.signinAccount.points) {
      const slow = await consume(this.signinAccount.slow, attempt.account);
      if (!slow.allowed) throw this.refused('signin-account', tooManySignIns(retryAfterS(slow.res)));
    }
    return attempt;
  }

  /** A wrong password (or unknown account): counted against the account too, and the pair blocked past its limit. */
  async signInFailed(attempt: SignInAttempt): Promise<void> {
    const [, struck] = await Promise.all([
      this.signinAccount ? consume(this.signinAccount.failures, attempt.account) : undefined,
      this.signinAccountIp ? pointsOf(this.redis, this.signinAccountIp.strikes, attempt.pair) : undefined,
    ]);
    if (!this.signinAccountIp) return;
    const { failures, strikes, points } = this.signinAccountIp;
    if (attempt.pairCount < points && !struck) return;
    // Past the limit, or failing again after an earlier block: block for twice as long as last time.
    const n = (await consume(strikes, attempt.pair)).res.consumedPoints;
    await failures.block(attempt.pair, Math.min(FIRST_DELAY_S * 2 ** (n - 1), MAX_DELAY_S));
  }

  /** A right password: this account and address start afresh, and the address gets its point back. */
  async signInSucceeded(attempt: SignInAttempt): Promise<void> {
    await Promise.all([
      this.signinAccountIp?.failures.delete(attempt.pair),
      this.signinAccountIp?.strikes.delete(attempt.pair),
      this.signinIp?.limiter.reward(attempt.ip, 1),
    ]);
  }

  /** The password was never checked (the hashing queue was full): the attempt's points go back. */
  async signInNotChecked(attempt: SignInAttempt): Promise<void> {
    await Promise.all([this.signinAccountIp?.failures.reward(attempt.pair, 1), this.signinIp?.limiter.reward(attempt.ip, 1)]);
  }

  /**
   * Before creating an account: takes this address's point at once (so sign-ups sent together are
   * all counted), and throws a 429 when it has made too many. `signUpNotMade` gives it back.
   */
  async takeSignUp(ip: string): Promise<void> {
    if (!this.signup) return;
    const taken = await consume(this.signup.limiter, key(ip));
    if (!taken.allowed) {
      const seconds = retryAfterS(taken.res);
      throw this.refused('signup-ip', new RetryLaterError(429, 'rate_limited', `Too many accounts were created from your network. Try again ${inWords(seconds)}.`, seconds));
    }
  }

  /** The sign-up was refused (a bad field, a taken name): it does not count. */
  async signUpNotMade(ip: string): Promise<void> {
    await this.signup?.limiter.reward(key(ip), 1);
  }

  /** One more verification mail for an account: a 429 past its limit. */
  async takeVerificationMail(userId: number): Promise<void> {
    if (!this.verifyEmail) return;
    const taken = await consume(this.verifyEmail.limiter, key(`user:${userId}`));
    if (!taken.allowed) throw this.refused('verify-email', tooManyMails(retryAfterS(taken.res)));
  }

  /**
   * One password-reset request, counted for the address asked about (whether or not an account
   * has it, so the limit tells nothing about accounts) and for the client's address: a 429 past
   * either.
   */
  async takePasswordReset(email: string, ip: string): Promise<void> {
    const taken = await Promise.all([
      this.resetEmail ? consume(this.resetEmail.limiter, key(email.trim().toLowerCase())) : undefined,
      this.resetIp ? consume(this.resetIp.limiter, key(ip)) : undefined,
    ]);
    const refused = taken.filter((t) => t && !t.allowed).map((t) => retryAfterS(t!.res));
    if (refused.length) throw this.refused(taken[0]?.allowed === false ? 'reset-email' : 'reset-ip', tooManyMails(Math.max(...refused)));
  }

  /** One report of leaked credentials from a client address: a 429 past its limit. */
  async takeCredentialReport(ip: string): Promise<void> {
    if (!this.credentialReportsIp) return;
    const taken = await consume(this.credentialReportsIp.limiter, key(ip));
    if (!taken.allowed) {
      const seconds = retryAfterS(taken.res);
      throw this.refused(
        'credential-reports-ip',
        new RetryLaterError(429, 'rate_limited', `too many credential reports from this address; try again ${inWords(seconds)}`, seconds),
      );
    }
  }

  /** Seconds a client must wait before authenticating again, or 0 when it may. */
  async clientAuthBlockedFor(clientId: string): Promise<number> {
    if (!this.clientAuth) return 0;
    const k = key(clientId);
    // The time left is read only for a client that used its failures up: a rare second read.
    if ((await pointsOf(this.redis, this.clientAuth.limiter, k)) < this.clientAuth.points) return 0;
    const res = await this.clientAuth.limiter.get(k);
    if (!res || res.consumedPoints < this.clientAuth.points) return 0;
    this.metrics.rateLimited('client-auth');
    return retryAfterS(res);
  }

  async clientAuthFailed(clientId: string): Promise<void> {
    if (this.clientAuth) await consume(this.clientAuth.limiter, key(clientId));
  }

  /** Counts one API request of a token (by its digest); undefined when the limit is off. */
  async apiRequest(tokenDigest: string): Promise<ApiVerdict | undefined> {
    if (!this.apiToken) return undefined;
    const { allowed, res } = await consume(this.apiToken.limiter, tokenDigest);
    if (!allowed) this.metrics.rateLimited('api-token');
    const limit = this.apiToken.points;
    const used = Math.min(res.consumedPoints, limit);
    return {
      allowed,
      allowance: { limit, used, remaining: Math.max(0, limit - used), resetAt: Math.ceil((Date.now() + res.msBeforeNext) / 1000) },
      retryAfterS: retryAfterS(res),
    };
  }

  /**
   * One poll of the token endpoint with a device code (by its digest): false when the same code
   * was polled less than the polling interval ago, which RFC 8628 answers with `slow_down`. The
   * interval counts from the poll that opened it; a refused poll does not push it further.
   */
  async devicePollAllowed(deviceCodeDigest: string): Promise<boolean> {
    const { allowed } = await consume(this.devicePoll, deviceCodeDigest);
    if (!allowed) this.metrics.rateLimited('device-poll');
    return allowed;
  }

  /** Counts a refusal by `limit` and gives back the error to throw. */
  private refused(limit: string, err: RetryLaterError): RetryLaterError {
    this.metrics.rateLimited(limit);
    return err;
  }

  /**
   * One more mail to `email` that proves the address (sign-up, e-mail change, Resend) or tells
   * its owner that someone tried to use it: a 429 past the limit. The address is counted whether
   * or not an account has it, so a refusal tells nothing about accounts.
   */
  async takeAddressMail(email: string): Promise<void> {
    if (!this.verifyAddress) return;
    const taken = await consume(this.verifyAddress.limiter, key(email.trim().toLowerCase()));
    if (!taken.allowed) throw this.refused('verify-address', tooManyMails(retryAfterS(taken.res)));
  }

  /**
   * Counts a mail about an account that its requester must not learn of (someone tried to sign
   * up with, or move to, the account's address): false past the account's limit, never a 429.
   */
  async accountMailAllowed(userId: number): Promise<boolean> {
    if (!this.verifyEmail) return true;
    const { allowed } = await consume(this.verifyEmail.limiter, key(`user:${userId}`));
    if (!allowed) this.metrics.rateLimited('verify-email');
    return allowed;
  }
}
