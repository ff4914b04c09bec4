import { hash } from 'node:crypto';
import { isIPv4, isIPv6 } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
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
import { inWords, RetryLaterError, tooManyRequests } from '../errors.js';
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
 *
 * Every limit that guards a secret (a password, a second factor, a passkey's answer, a client
 * secret, a device's user code) takes its point before the secret is compared, in one atomic
 * step of its counter (a consume, never a read and a later write), so that secrets sent at once
 * are all counted before any is compared. Every per-address counter keys its address with
 * addressKey (an IPv6 client by its /64).
 */

/** The first block after too many failures of one account from one address; each further one doubles it. */
const FIRST_DELAY_S = 60;
const MAX_DELAY_S = 24 * 60 * 60;
/** How long the doubling remembers earlier blocks. */
const STRIKES_WINDOW_S = 24 * 60 * 60;
const SLOW_ACCOUNT_EVERY_S = 60;
/**
 * A client's request holds its point until its secret is compared, so a server sending many
 * token requests at once can find the points taken by its own requests: then it waits for them
 * (a new try every CLIENT_AUTH_RETRY_MS, CLIENT_AUTH_WAIT_MS at most) instead of being refused.
 * Only failures make a 429 at once.
 */
const CLIENT_AUTH_WAIT_MS = 1000;
const CLIENT_AUTH_RETRY_MS = 20;

export interface ApiAllowance {
  limit: number;
  /** The window `limit` counts over, in seconds. */
  windowS: number;
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

/**
 * The network a per-address limit counts, for every such limit: an IPv4 address is itself; an
 * IPv6 address stands for its /64, since one subscriber or host is usually given a whole /64 and
 * may send from any of its 2^64 addresses; an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`, as a
 * dual-stack socket reports an IPv4 client) is the IPv4 address it maps. Anything else (no
 * address at all) is kept as it is.
 */
export function addressKey(ip: string): string {
  const address = ip.replace(/%.*$/, '');
  if (isIPv4(address) || !isIPv6(address)) return address;
  const groups = ipv6Groups(address);
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return [groups[6]! >> 8, groups[6]! & 0xff, groups[7]! >> 8, groups[7]! & 0xff].join('.');
  }
  return `${groups.slice(0, 4).map((g) => g.toString(16)).join(':')}::/64`;
}

/** The eight 16-bit groups of a valid IPv6 address (`::` expanded, a dotted IPv4 tail as two groups). */
function ipv6Groups(address: string): number[] {
  let text = address.toLowerCase();
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const before = head ? head.split(':') : [];
  const after = tail ? tail.split(':') : [];
  const groups = tail === undefined ? before : [...before, ...Array<string>(8 - before.length - after.length).fill('0'), ...after];
  return groups.map((g) => parseInt(g, 16));
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
  /** The window the points are counted over, in seconds. */
  durationS: number;
}

/**
 * A counter's points taken in its window (0 when it has none). On Redis the counter is a plain
 * integer key: one GET, where the library's own read sends MULTI, GET, PTTL and EXEC. Never used
 * to let a secret be checked: a limit that guards one consumes its point first.
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
  private readonly clientRegistration?: Counter;
  private readonly clientAuth?: Counter & { failures: RateLimiterAbstract };
  private readonly apiToken?: Counter;
  private readonly verifyEmail?: Counter;
  private readonly resetEmail?: Counter;
  private readonly resetIp?: Counter;
  private readonly devicePoll: RateLimiterAbstract;
  private readonly credentialReportsIp?: Counter;
  private readonly deviceCodeBrowser?: Counter;
  private readonly deviceCodeIp?: Counter;
  private readonly redis: RedisClient | undefined;
  private readonly verifyAddress?: Counter;

  /** `metrics` counts each refusal by the limit's name (the counter's prefix: `signin-ip`, `api-token`, …). */
  constructor(config: Config, db: Knex, redis: RedisClient | undefined, redisKeyPrefix = 'idp:', private readonly metrics: Pick<Metrics, 'rateLimited'> = noMetrics) {
    const store = storeOf(config, db, redis, redisKeyPrefix);
    this.redis = redis;
    const limits = config.rateLimits;
    const make = (name: string, limit: RateLimit) => store({ keyPrefix: name, points: limit.points, duration: limit.durationS });
    const counter = (name: string, limit: RateLimit): Counter => ({ limiter: make(name, limit), points: limit.points, durationS: limit.durationS });
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
    if (limits.clientRegistrationIp) this.clientRegistration = counter('client-registration-ip', limits.clientRegistrationIp);
    if (limits.clientAuth) this.clientAuth = { ...counter('client-auth', limits.clientAuth), failures: make('client-auth-failures', limits.clientAuth) };
    if (limits.apiToken) this.apiToken = counter('api-token', limits.apiToken);
    if (limits.verifyEmail) this.verifyEmail = counter('verify-email', limits.verifyEmail);
    if (limits.resetEmail) this.resetEmail = counter('reset-email', limits.resetEmail);
    if (limits.resetIp) this.resetIp = counter('reset-ip', limits.resetIp);
    // Not a limit one turns off: RFC 8628's polling interval, which the device is told.
    this.devicePoll = store({ keyPrefix: 'device-poll', points: 1, duration: config.deviceFlow.pollIntervalS });
    if (limits.credentialReportsIp) this.credentialReportsIp = counter('credential-reports-ip', limits.credentialReportsIp);
    if (limits.deviceCodeBrowser) this.deviceCodeBrowser = counter('device-code-browser', limits.deviceCodeBrowser);
    if (limits.deviceCodeIp) this.deviceCodeIp = counter('device-code-ip', limits.deviceCodeIp);
    if (limits.verifyAddress) this.verifyAddress = counter('verify-address', limits.verifyAddress);
  }

  /**
   * Before a password (or a second factor, or a passkey's answer) is checked: throws a 429 when
   * this account and address are blocked, when the address has failed too often, or when the
   * account is slowed down and was tried within the minute. The attempt takes its point from each
   * counter now, not after the check: 16 guesses sent at once are counted as 16 before any is
   * checked, so no more get through than the limits allow. Past the account's own limit, one
   * attempt a minute may go on (a point of its slow-down counter, taken the same way). A right
   * secret gives the points back; a refused attempt gives back the account's point, so only
   * checked failures slow an account down.
   */
  async beforeSignIn(account: string, ip: string): Promise<SignInAttempt> {
    const network = addressKey(ip);
    const attempt: SignInAttempt = { pair: key(account, network), ip: key(network), account: key(account), pairCount: 0 };
    const [pair, address, failures] = await Promise.all([
      this.signinAccountIp ? consume(this.signinAccountIp.failures, attempt.pair) : undefined,
      this.signinIp ? consume(this.signinIp.limiter, attempt.ip) : undefined,
      this.signinAccount ? consume(this.signinAccount.failures, attempt.account) : undefined,
    ]);
    attempt.pairCount = pair?.res.consumedPoints ?? 0;
    const refuse = async (name: string, seconds: number) => {
      await this.signinAccount?.failures.reward(attempt.account, 1);
      return this.refused(name, tooManySignIns(seconds));
    };
    for (const [name, taken] of [['signin-account-ip', pair], ['signin-ip', address]] as const) {
      if (taken && !taken.allowed) throw await refuse(name, retryAfterS(taken.res));
    }
    if (this.signinAccount && failures && !failures.allowed) {
      const slow = await consume(this.signinAccount.slow, attempt.account);
      if (!slow.allowed) throw await refuse('signin-account', retryAfterS(slow.res));
    }
    return attempt;
  }

  /** A wrong password (or unknown account): its points stay taken, and the pair is blocked past its limit. */
  async signInFailed(attempt: SignInAttempt): Promise<void> {
    if (!this.signinAccountIp) return;
    const { failures, strikes, points } = this.signinAccountIp;
    const struck = await pointsOf(this.redis, strikes, attempt.pair);
    if (attempt.pairCount < points && !struck) return;
    // Past the limit, or failing again after an earlier block: block for twice as long as last time.
    const n = (await consume(strikes, attempt.pair)).res.consumedPoints;
    await failures.block(attempt.pair, Math.min(FIRST_DELAY_S * 2 ** (n - 1), MAX_DELAY_S));
  }

  /** A right password: this account and address start afresh, and the address and the account get their points back. */
  async signInSucceeded(attempt: SignInAttempt): Promise<void> {
    await Promise.all([
      this.signinAccountIp?.failures.delete(attempt.pair),
      this.signinAccountIp?.strikes.delete(attempt.pair),
      this.signinIp?.limiter.reward(attempt.ip, 1),
      this.signinAccount?.failures.reward(attempt.account, 1),
    ]);
  }

  /** The password was never checked (the hashing queue was full): the attempt's points go back. */
  async signInNotChecked(attempt: SignInAttempt): Promise<void> {
    await Promise.all([
      this.signinAccountIp?.failures.reward(attempt.pair, 1),
      this.signinIp?.limiter.reward(attempt.ip, 1),
      this.signinAccount?.failures.reward(attempt.account, 1),
    ]);
  }

  /**
   * Before creating an account: takes this address's point at once (so sign-ups sent together are
   * all counted), and throws a 429 when it has made too many. `signUpNotMade` gives it back.
   */
  async takeSignUp(ip: string): Promise<void> {
    if (!this.signup) return;
    const taken = await consume(this.signup.limiter, key(addressKey(ip)));
    if (!taken.allowed) {
      const seconds = retryAfterS(taken.res);
      throw this.refused('signup-ip', new RetryLaterError(429, 'rate_limited', `Too many accounts were created from your network. Try again ${inWords(seconds)}.`, seconds));
    }
  }

  /**
   * One client registered without a person (a metadata document fetched, or a dynamic
   * registration) from this address: a 429 past its limit. The point is taken before the fetch or
   * the write, so parallel registrations are counted before any is made.
   */
  async takeClientRegistration(ip: string): Promise<void> {
    if (!this.clientRegistration) return;
    const taken = await consume(this.clientRegistration.limiter, key(addressKey(ip)));
    if (!taken.allowed) {
      const seconds = retryAfterS(taken.res);
      throw this.refused('client-registration-ip', new RetryLaterError(429, 'rate_limited', `Too many clients were registered from your network. Try again ${inWords(seconds)}.`, seconds));
    }
  }

  /** The sign-up was refused (a bad field, a taken name): it does not count. */
  async signUpNotMade(ip: string): Promise<void> {
    await this.signup?.limiter.reward(key(addressKey(ip)), 1);
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
      this.resetIp ? consume(this.resetIp.limiter, key(addressKey(ip))) : undefined,
    ]);
    const refused = taken.filter((t) => t && !t.allowed).map((t) => retryAfterS(t!.res));
    if (refused.length) throw this.refused(taken[0]?.allowed === false ? 'reset-email' : 'reset-ip', tooManyMails(Math.max(...refused)));
  }

  /** One report of leaked credentials from a client address: a 429 past its limit. */
  async takeCredentialReport(ip: string): Promise<void> {
    if (!this.credentialReportsIp) return;
    const taken = await consume(this.credentialReportsIp.limiter, key(addressKey(ip)));
    if (!taken.allowed) {
      const seconds = retryAfterS(taken.res);
      throw this.refused('credential-reports-ip', tooManyRequests('Too many credential reports from this address', this.credentialReportsIp, seconds));
    }
  }

  /**
   * Before a client secret is compared: takes a point from this client_id at this address (its
   * network: an IPv6 client by its /64), and returns the seconds to wait when none is left (0:
   * go on). Counted per address, so someone else's wrong secrets never refuse the application's
   * own server. A right secret gives the point back (clientAuthSucceeded); a wrong one keeps it
   * and is recorded as a failure (clientAuthFailed). When the points are taken but not by
   * failures, they are held by this client's own requests still being checked: the request
   * waits for them (CLIENT_AUTH_WAIT_MS at most) rather than being refused, and is compared only
   * once it holds a point, so no more secrets are compared than the limit allows.
   */
  async takeClientAuth(clientId: string, ip: string): Promise<number> {
    if (!this.clientAuth) return 0;
    const { limiter, failures, points } = this.clientAuth;
    const k = key(clientId, addressKey(ip));
    const until = Date.now() + CLIENT_AUTH_WAIT_MS;
    for (;;) {
      const taken = await consume(limiter, k);
      if (taken.allowed) return 0;
      if (Date.now() >= until || (await pointsOf(this.redis, failures, k)) >= points) {
        this.metrics.rateLimited('client-auth');
        return retryAfterS(taken.res);
      }
      // The refused try took a point too: it goes back before the next try.
      await limiter.reward(k, 1);
      await sleep(CLIENT_AUTH_RETRY_MS);
    }
  }

  /** The client authenticated (or its secret was never compared): its point goes back. */
  async clientAuthSucceeded(clientId: string, ip: string): Promise<void> {
    await this.clientAuth?.limiter.reward(key(clientId, addressKey(ip)), 1);
  }

  /** A wrong secret (or an unknown client): its point stays taken, and it counts as a failure. */
  async clientAuthFailed(clientId: string, ip: string): Promise<void> {
    if (this.clientAuth) await consume(this.clientAuth.failures, key(clientId, addressKey(ip)));
  }

  /**
   * Before a device user code entered at /login/device is looked up: takes a point from the
   * browser (`browser`: what identifies it, when it has anything) and from its address, and
   * throws a 429 when either has none left. Every code entered counts, right or wrong: a code an
   * attacker holds (any application with the device flow can make them) must not earn guesses
   * back. Only a device connected once (deviceConnected) gives one point back.
   */
  async takeDeviceCodeEntry(browser: string | undefined, ip: string): Promise<void> {
    const taken = await Promise.all([
      this.deviceCodeBrowser && browser ? consume(this.deviceCodeBrowser.limiter, key(browser)) : undefined,
      this.deviceCodeIp ? consume(this.deviceCodeIp.limiter, key(addressKey(ip))) : undefined,
    ]);
    const refused = taken.filter((t) => t && !t.allowed).map((t) => retryAfterS(t!.res));
    if (!refused.length) return;
    const seconds = Math.max(...refused);
    throw this.refused(
      taken[0]?.allowed === false ? 'device-code-browser' : 'device-code-ip',
      new RetryLaterError(429, 'rate_limited', `Too many codes were entered here. Try again ${inWords(seconds)}.`, seconds),
    );
  }

  /** A code was confirmed and its device connected (which happens once per code): one point back. */
  async deviceConnected(browser: string | undefined, ip: string): Promise<void> {
    await Promise.all([
      browser ? this.deviceCodeBrowser?.limiter.reward(key(browser), 1) : undefined,
      this.deviceCodeIp?.limiter.reward(key(addressKey(ip)), 1),
    ]);
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
      allowance: { limit, windowS: this.apiToken.durationS, used, remaining: Math.max(0, limit - used), resetAt: Math.ceil((Date.now() + res.msBeforeNext) / 1000) },
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
