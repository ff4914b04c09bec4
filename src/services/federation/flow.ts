import { recordAudit } from '../../db/audit.js';
import { callbackUrl } from './manage.js';
import { UpstreamAnswerError } from './discovery.js';
import type { Knex } from 'knex';
import * as client from 'openid-client';
import { z } from 'zod';
import { findIdentity, insertIdentity, recordIdentityUse } from '../../db/identities.js';
import { enabledSignInProviders, findSignInProvider, findSignInProviderById } from '../../db/sign-in-providers.js';
import { findUserByLogin, insertUser, userTakenField, type LoginRow } from '../../db/users.js';
import { ConflictError } from '../../errors.js';
import type { KeyCipher } from '../../key-encryption.js';
import type { UpstreamResult } from '../../metrics.js';
import { isDisabled } from '../../policies/site.js';
import { now } from '../../time.js';
import { noPasswordHash } from '../passwords.js';
import * as rules from '../rules.js';
import { isUniqueViolation } from '../../db/knex.js';
import { directoryKindOf, redirectKindOf } from './kinds.js';
import { openProvider } from './providers.js';
import type { UpstreamKind, UpstreamProfile, UpstreamProvider } from './upstream.js';

/**
 * The sign-in through an upstream provider, the same for every kind: the round trip (PKCE with
 * S256, `state`, and a `nonce` when an ID token comes back), the callback checked by openid-client
 * (state, the RFC 9207 `iss` when the upstream sends it, the ID token's signature, audience,
 * issuer and nonce), and then what the identity leads to, in this order: an identity linked
 * already signs in to its account; an unlinked one whose address the upstream verified, and that
 * an account here has verified too, is offered to be linked by signing in to that account (never
 * linked by the address alone); otherwise a new account, when the provider allows new accounts
 * and the address's domain. Upstream tokens are used for the profile and then dropped.
 */

/** How long an upstream may take to answer one request. */
export const UPSTREAM_TIMEOUT_MS = 5000;
/** How long a round trip to the upstream, and the page that follows its callback, may take. */
export const ROUND_TRIP_MS = 10 * 60 * 1000;

/** Why an upstream sign-in did not go on, with the status and the words its page shows. */
export class UpstreamFailure extends Error {
  constructor(
    readonly reason: Exclude<UpstreamResult, 'success' | 'link' | 'sign_up' | 'linked'>,
    readonly status: number,
    message: string,
    /** For the log only: what the upstream or the library said (never a token). */
    readonly detail?: string,
  ) {
    super(message);
  }
}

/** Where a sign-in goes on once the person is known: the site (a return path), or an authorization flow (its interaction). */
export type Place = { site: string } | { flow: string };

/** What the browser carries through the round trip, in a signed cookie of its own. */
export interface RoundTrip {
  provider: number;
  state: string;
  verifier: string;
  nonce?: string;
  intent: 'sign-in' | 'link';
  /** With intent `link`: the account the identity is linked to. */
  userId?: number;
  place: Place;
}

/** A provider the pages may use: known kind, not disabled. */
export async function usableProvider(db: Knex, cipher: KeyCipher | undefined, slug: string): Promise<{ provider: UpstreamProvider; kind: UpstreamKind }> {
  const row = /^[a-z0-9][a-z0-9-]{0,62}$/.test(slug) ? await findSignInProvider(db, slug) : undefined;
  const kind = row && redirectKindOf(row.kind);
  if (!row || !kind) throw new UpstreamFailure('disabled', 404, 'There is no such sign-in provider here.');
  if (row.disabled_at !== null) throw new UpstreamFailure('disabled', 403, `Signing in with ${row.name} is turned off on this server.`);
  return { provider: openProvider(row, cipher), kind };
}

export async function providerById(db: Knex, cipher: KeyCipher | undefined, id: number): Promise<{ provider: UpstreamProvider; kind: UpstreamKind }> {
  const row = await findSignInProviderById(db, id);
  if (!row) throw new UpstreamFailure('disabled', 404, 'This sign-in provider was removed. Choose another way to sign in.');
  return usableProvider(db, cipher, row.slug);
}

/**
 * What the sign-in pages offer besides a password: a "Continue with <name>" button per provider
 * that redirects, and the names of the directories whose usernames and passwords the form takes.
 */
export async function signInChoices(db: Knex): Promise<{ buttons: { slug: string; name: string }[]; directories: string[] }> {
  const rows = await enabledSignInProviders(db);
  return {
    buttons: rows.filter((row) => redirectKindOf(row.kind)).map((row) => ({ slug: row.slug, name: row.name })),
    directories: rows.filter((row) => directoryKindOf(row.kind)).map((row) => row.name),
  };
}

/**
 * The provider's openid-client configuration. Each kind keeps it per version of the provider's
 * row (discovered once, not on every sign-in; a failed discovery is not kept).
 */
export function configurationOf(provider: UpstreamProvider, kind: UpstreamKind, options: { allowHttp: boolean }): Promise<client.Configuration> {
  return kind.configure(provider, { timeoutMs: UPSTREAM_TIMEOUT_MS, allowHttp: options.allowHttp });
}

/** The authorization request to send the browser to, and the round trip it keeps meanwhile. */
export async function beginRoundTrip(
  config: client.Configuration,
  provider: UpstreamProvider,
  kind: UpstreamKind,
  options: { issuer: string; intent: 'sign-in' | 'link'; userId?: number; place: Place },
): Promise<{ url: URL; trip: RoundTrip }> {
  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const nonce = kind.usesIdToken ? client.randomNonce() : undefined;
  const scopes = provider.scopes.length ? provider.scopes : kind.defaultScopes;
  const params: Record<string, string> = {
    redirect_uri: callbackUrl(options.issuer, provider.slug),
    scope: scopes.join(' '),
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
    ...(nonce ? { nonce } : {}),
    ...kind.authorizationParameters?.(provider),
  };
  const url = client.buildAuthorizationUrl(config, params);
  return { url, trip: { provider: provider.id, state, verifier, nonce, intent: options.intent, userId: options.userId, place: options.place } };
}

/** Every cause of an error, outermost first. */
function causes(err: unknown): unknown[] {
  const chain: unknown[] = [];
  for (let e: unknown = err; e && chain.length < 8; e = (e as { cause?: unknown }).cause) chain.push(e);
  return chain;
}

/**
 * The status of a page saying the provider failed (did not answer, answered with an error or with
 * something unverifiable): 424 Failed Dependency, not a 5xx. This server worked; a 5xx would page
 * its operators for another site's outage. The failures are counted by reason in the metrics.
 */
const UPSTREAM_FAILED = 424;

/** An error of openid-client, fetch or the upstream, as the failure the person is shown. */
export function failureOf(err: unknown, providerName: string): UpstreamFailure {
  if (err instanceof UpstreamFailure) return err;
  const chain = causes(err);
  const named = (name: string) => chain.some((e) => e instanceof Error && e.name === name);
  // Only the errors' own words: a cause may be the callback's parameters, and its code is a credential.
  const detail = chain.filter((e): e is Error => e instanceof Error).map((e) => `${e.name}: ${e.message}`).join(' <- ').slice(0, 500);
  if (named('TimeoutError') || named('AbortError')) {
    return new UpstreamFailure('timeout', UPSTREAM_FAILED, `${providerName} did not answer in time. It may be busy or unreachable: try again in a moment, or use another way to sign in.`, detail);
  }
  if (err instanceof client.AuthorizationResponseError) {
    if (err.error === 'access_denied') {
      return new UpstreamFailure('denied', 403, `${providerName} did not sign you in: the request was declined there. You can try again, or use another way to sign in.`, detail);
    }
    return new UpstreamFailure('upstream_error', UPSTREAM_FAILED, `${providerName} answered with an error (${err.error.replace(/[^a-z_]/gi, '').slice(0, 40)}). Try again, or use another way to sign in.`, detail);
  }
  if (chain.some((e) => e instanceof TypeError && /fetch failed/.test(e.message)) || chain.some((e) => typeof (e as { code?: unknown }).code === 'string' && /^(ECONNREFUSED|ENOTFOUND|ECONNRESET|EAI_AGAIN|EHOSTUNREACH|UND_ERR_)/.test((e as { code: string }).code))) {
    return new UpstreamFailure('unreachable', UPSTREAM_FAILED, `${providerName} could not be reached. Try again in a moment, or use another way to sign in.`, detail);
  }
  if (chain.some((e) => e instanceof UpstreamAnswerError && e.reason === 'domain')) {
    return new UpstreamFailure('domain_not_allowed', 403, `Your ${providerName} account is not in a domain allowed to sign in here. Use an account of the allowed domain, or another way to sign in.`, detail);
  }
  if (chain.some((e) => e instanceof client.ClientError && /state/i.test(e.message))) {
    return new UpstreamFailure('bad_state', 400, 'This answer does not belong to a sign-in started in this browser. Start again from the sign-in page.', detail);
  }
  return new UpstreamFailure('invalid_response', UPSTREAM_FAILED, `${providerName}'s answer could not be verified, so it was not used to sign you in. Try again, or use another way to sign in.`, detail);
}

/**
 * Ends the round trip at the callback: the code exchanged (with the verifier, state and nonce of
 * this browser's round trip), then the person read. The tokens are not kept.
 */
export async function finishRoundTrip(config: client.Configuration, kind: UpstreamKind, trip: RoundTrip, currentUrl: URL, providerName: string): Promise<UpstreamProfile> {
  try {
    const tokens = await client.authorizationCodeGrant(config, currentUrl, {
      pkceCodeVerifier: trip.verifier,
      expectedState: trip.state,
      expectedNonce: trip.nonce,
      idTokenExpected: kind.usesIdToken,
    });
    return await kind.profile(config, tokens, { timeoutMs: UPSTREAM_TIMEOUT_MS });
  } catch (err) {
    throw failureOf(err, providerName);
  }
}

/** Whether the upstream's own two-factor counts here: the provider is trusted for it, and its `amr` says one was used. */
export function trustedSecondFactor(provider: UpstreamProvider, profile: UpstreamProfile): boolean {
  return provider.trustMfa && profile.amr.some((method) => method === 'mfa' || method === 'otp' || method === 'hwk');
}

/** The session's `amr` after an upstream sign-in. */
export function upstreamAmr(provider: UpstreamProvider, profile: UpstreamProfile): string[] {
  return trustedSecondFactor(provider, profile) ? ['fed', 'mfa'] : ['fed'];
}

/** What an identity leads to, once the upstream has vouched for it. */
export type Decision =
  | { step: 'sign-in'; user: LoginRow; identityId: number }
  | { step: 'link'; user: LoginRow }
  | { step: 'sign-up' };

function domainOf(email: string): string {
  return email.slice(email.lastIndexOf('@') + 1);
}

/** Refuses an address whose domain the provider does not allow (when it names any). */
export function checkDomain(provider: UpstreamProvider, profile: UpstreamProfile): void {
  if (!provider.allowedDomains.length) return;
  const domain = profile.email ? domainOf(profile.email) : '';
  if (!domain || !provider.allowedDomains.includes(domain)) {
    throw new UpstreamFailure('domain_not_allowed', 403, domain
      ? `Addresses at ${domain} cannot sign in with ${provider.name} here. Use an account with an allowed address, or another way to sign in.`
      : `${provider.name} did not share your e-mail address, and this server signs in only addresses of some domains with it.`);
  }
}

/** The way on for an upstream identity signing in (not linking): see the order at the top of this file. */
export async function decide(db: Knex, provider: UpstreamProvider, profile: UpstreamProfile): Promise<Decision> {
  // The allowed domains hold for every sign-in through the provider, linked identities' too.
  checkDomain(provider, profile);
  const linked = await findIdentity(db, provider.id, profile.subject);
  if (linked) {
    const user = await loginRowById(db, linked.user_id);
    if (!user || isDisabled(user)) throw new UpstreamFailure('account_disabled', 403, 'The account linked to this sign-in is disabled. Contact the site administrator.');
    return { step: 'sign-in', user, identityId: linked.id };
  }
  const holder = profile.email ? await findUserByLogin(db, profile.email) : undefined;
  if (holder) {
    if (!profile.emailVerified) {
      throw new UpstreamFailure('address_unverified', 403, `An account here already uses ${profile.email}, and ${provider.name} has not verified that you own it, so it cannot be used to sign in to that account. Sign in with your password, or verify the address at ${provider.name} first.`);
    }
    if (!holder.email_verified_at) {
      throw new UpstreamFailure('address_unverified', 403, `An account here already uses ${profile.email}, but its address is not verified, so it cannot be linked from ${provider.name}. Sign in with your password instead.`);
    }
    if (isDisabled(holder)) throw new UpstreamFailure('account_disabled', 403, 'The account with this address is disabled. Contact the site administrator.');
    return { step: 'link', user: holder };
  }
  if (!provider.allowSignUp) {
    throw new UpstreamFailure('sign_up_closed', 403, `Your ${provider.name} account is not linked to an account here, and new accounts cannot be made with ${provider.name}. Sign in another way, then link ${provider.name} in Account settings → Sign-in methods.`);
  }
  if (!profile.email) throw new UpstreamFailure('no_address', 400, `${provider.name} did not share an e-mail address, which a new account needs. Allow it to share your address and try again.`);
  return { step: 'sign-up' };
}

export async function loginRowById(db: Knex, id: number): Promise<LoginRow | undefined> {
  const user = await db('users').where({ id }).first('username');
  return user ? findUserByLogin(db, String(user.username)) : undefined;
}

/** The identity's use recorded on its link (the upstream's current username and address). */
export function identityUsed(db: Knex, identityId: number, profile: UpstreamProfile): Promise<void> {
  return recordIdentityUse(db, identityId, { username: profile.username.slice(0, 200), email: profile.email.slice(0, 254) }, now());
}

/** Links an identity to an account; refused when it is linked already, to anyone, or the account has one of this provider. */
export async function linkIdentity(db: Knex, provider: UpstreamProvider, profile: UpstreamProfile, user: { id: number; username: string }, ip: string | null): Promise<void> {
  const userId = user.id;
  const linked = await findIdentity(db, provider.id, profile.subject);
  if (linked && linked.user_id !== userId) {
    throw new UpstreamFailure('identity_taken', 409, `This ${provider.name} account is already linked to another account here. Unlink it there first.`);
  }
  if (linked) return;
  const inserted = await insertIdentity(db, { userId, providerId: provider.id, subject: profile.subject, username: profile.username.slice(0, 200), email: profile.email.slice(0, 254), at: now() });
  if (!inserted) throw new UpstreamFailure('identity_taken', 409, `Your account already has a ${provider.name} account linked. Unlink it in Account settings → Sign-in methods to link another.`);
  await recordAudit(db, { groupId: null, userId, actorId: userId, action: 'user.identity.link', target: user.username, details: { provider: provider.slug, username: profile.username.slice(0, 200) }, ip }, now());
}

/** A username suggested from the upstream's, made to fit this service's rules (the person may change it). */
export function suggestedUsername(profile: UpstreamProfile): string {
  const base = (profile.username || profile.email.split('@')[0] || '').replace(/[^A-Za-z0-9_.-]+/g, '-').replace(/^[-_.]+|[-_.]+$/g, '');
  return base.slice(0, 39);
}

/** The account made from an upstream identity: no password, the address verified only if the upstream verified it, the identity linked. */
export async function createAccountFromUpstream(db: Knex, provider: UpstreamProvider, profile: UpstreamProfile, input: { username: string; name: string }): Promise<LoginRow> {
  const { username, name } = rules.parse(z.object({ username: rules.username, name: rules.personName }), input);
  const taken = await userTakenField(db, username, profile.email);
  if (taken === 'email') throw new UpstreamFailure('address_unverified', 409, `An account here already uses ${profile.email}. Sign in to it instead.`);
  if (taken === 'username') throw new ConflictError('username', `username "${username}" is already taken`);
  const at = now();
  try {
    const user = await db.transaction(async (trx) => {
      const made = await insertUser(trx, { username, email: profile.email, name, passwordHash: noPasswordHash(), at, emailVerified: profile.emailVerified });
      const linked = await insertIdentity(trx, { userId: made.id, providerId: provider.id, subject: profile.subject, username: profile.username.slice(0, 200), email: profile.email.slice(0, 254), at });
      if (!linked) throw new UpstreamFailure('identity_taken', 409, `This ${provider.name} account is already linked to an account here. Sign in with it again.`);
      return made;
    });
    return { ...user, two_factor: false };
  } catch (err) {
    if (isUniqueViolation(err)) throw new ConflictError('username', 'username is already taken');
    throw err;
  }
}
