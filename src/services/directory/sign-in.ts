import type { Knex } from 'knex';
import type Provider from 'oidc-provider';
import { findIdentity } from '../../db/identities.js';
import { enabledSignInProviders } from '../../db/sign-in-providers.js';
import { findUserByLogin, type LoginRow } from '../../db/users.js';
import { AppError, ConflictError } from '../../errors.js';
import type { KeyCipher } from '../../key-encryption.js';
import type { Logger } from '../../log.js';
import type { Metrics, UpstreamResult } from '../../metrics.js';
import { isDisabled } from '../../policies/site.js';
import { checkDomain, createAccountFromUpstream, identityUsed, linkIdentity, loginRowById, suggestedUsername, UpstreamFailure } from '../federation/flow.js';
import { directoryKindOf } from '../federation/kinds.js';
import { openProvider } from '../federation/providers.js';
import type { UpstreamProfile, UpstreamProvider } from '../federation/upstream.js';
import type { DirectoryCheck, DirectoryOutcome } from '../users.js';
import { restoreIdentity, suspendSubject } from './accounts.js';
import { Directories, DirectoryUnavailable, type Directory, type DirectoryEntry } from './connection.js';
import { applyGroupMapping } from './groups.js';
import { checkDirectoryAccounts, claimCheck, type CheckResult } from './check.js';

/**
 * Signing in with a directory's username and password on the site's own sign-in form. Each
 * enabled directory is asked in the providers' order: the service account searches the user
 * filter with the typed username (escaped), and when it finds exactly one person, a bind as
 * that person checks the password (never stored, never logged). Then, as for an upstream
 * sign-in: the linked account signs in; else an account here with the same verified address is
 * linked (the directory's address counts as verified: the site's administrator chose to trust
 * the directory); else a first sign-in makes the account, when the provider allows it. The
 * group mapping is applied each time. The account's own second factor is asked after this, as
 * after a password.
 */

export interface DirectorySignInDeps {
  db: Knex;
  cipher: KeyCipher | undefined;
  provider: Provider;
  metrics: Metrics;
  log: Logger;
}

const usernameCandidates = (base: string) => [base, ...Array.from({ length: 8 }, (_, i) => `${base.slice(0, 36)}-${i + 2}`)];

export class DirectorySignIn implements DirectoryCheck {
  readonly directories = new Directories();

  constructor(private readonly deps: DirectorySignInDeps) {}

  /** The enabled directory providers, in the sign-in page's order. */
  async providers(): Promise<UpstreamProvider[]> {
    const rows = await enabledSignInProviders(this.deps.db);
    return rows.filter((row) => directoryKindOf(row.kind)).map((row) => openProvider(row, this.deps.cipher));
  }

  async configured(): Promise<boolean> {
    return (await enabledSignInProviders(this.deps.db)).some((row) => directoryKindOf(row.kind));
  }

  async check(attempt: { login: string; password: string; ip: string }): Promise<DirectoryOutcome> {
    const unavailable: string[] = [];
    for (const provider of await this.providers()) {
      const directory = this.directories.of(provider);
      try {
        const entry = await directory.findUser(attempt.login);
        if (!entry) continue;
        if (!(await directory.checkPassword(entry.dn, attempt.password))) {
          // A locked entry's bind fails too (OpenLDAP's ppolicy, Active Directory): its account here ends all the same.
          if (entry.disabled) await this.suspend(provider, entry);
          this.deps.metrics.upstreamSignIn(provider.slug, 'denied');
          return { outcome: 'wrong-password' };
        }
        if (entry.disabled) {
          await this.suspend(provider, entry);
          this.deps.metrics.upstreamSignIn(provider.slug, 'account_disabled');
          return { outcome: 'disabled', message: `Your ${provider.name} account is disabled, so it cannot sign in here. Contact your directory's administrator.` };
        }
        return await this.signInAs(provider, directory, entry, attempt.ip);
      } catch (err) {
        if (!(err instanceof DirectoryUnavailable)) throw err;
        this.deps.metrics.upstreamSignIn(provider.slug, err.reason === 'timeout' ? 'timeout' : 'unreachable');
        this.deps.log.warn({ provider: provider.slug, reason: err.reason, err: err.cause ?? err }, 'directory could not be asked at sign-in');
        unavailable.push(provider.name);
      }
    }
    if (unavailable.length) {
      return { outcome: 'unavailable', message: `${unavailable.join(', ')} could not be reached, so directory accounts cannot sign in right now. Try again in a moment.` };
    }
    return { outcome: 'not-found' };
  }

  private async suspend(provider: UpstreamProvider, entry: DirectoryEntry): Promise<void> {
    if (await suspendSubject(this.deps, provider, entry.subject, 'disabled')) {
      this.deps.log.info({ provider: provider.slug, dn: entry.dn }, 'account disabled: its directory entry is disabled');
    }
  }

  /** The person the directory vouched for, to an account here. */
  private async signInAs(provider: UpstreamProvider, directory: Directory, entry: DirectoryEntry, ip: string): Promise<DirectoryOutcome> {
    const refused = (status: number, message: string, result: UpstreamResult): DirectoryOutcome => {
      this.deps.metrics.upstreamSignIn(provider.slug, result);
      return { outcome: 'refused', status, message };
    };
    if (!entry.subject) {
      this.deps.log.warn({ provider: provider.slug, dn: entry.dn, attribute: directory.settings.idAttribute }, 'directory entry has no unique ID attribute');
      return refused(403, `${provider.name} did not give this account's unique ID (${directory.settings.idAttribute}), so it cannot sign in here. A site administrator must check the provider's settings.`, 'invalid_response');
    }
    const profile: UpstreamProfile = { subject: entry.subject, username: entry.username, name: entry.name, email: entry.email, emailVerified: true, amr: [] };
    let user: LoginRow | undefined;
    try {
      checkDomain(provider, profile);
      user = await this.accountOf(provider, profile, ip);
    } catch (err) {
      if (err instanceof UpstreamFailure) return refused(err.status, err.message, err.reason);
      if (err instanceof AppError && err.status < 500) return refused(err.status, err.message, 'sign_up_closed');
      throw err;
    }
    if (!user) return { outcome: 'disabled', message: 'This account is disabled. Contact the site administrator.' };
    const identity = await findIdentity(this.deps.db, provider.id, entry.subject);
    if (identity) await identityUsed(this.deps.db, identity.id, profile);
    if (directory.settings.groupMapping.length) {
      // The password is checked; a directory that fails now leaves the groups as they were.
      try {
        await applyGroupMapping(this.deps.db, provider, directory.settings.groupMapping, user, await directory.groupsOf(entry));
      } catch (err) {
        if (!(err instanceof DirectoryUnavailable)) throw err;
        this.deps.log.warn({ provider: provider.slug, reason: err.reason }, 'directory groups could not be read at sign-in; memberships left as they were');
      }
    }
    this.deps.metrics.upstreamSignIn(provider.slug, 'success');
    return { outcome: 'signed-in', user };
  }

  /** The account the person signs in to (linked, linked now, or made now); undefined when it is disabled here. */
  private async accountOf(provider: UpstreamProvider, profile: UpstreamProfile, ip: string): Promise<LoginRow | undefined> {
    const { db } = this.deps;
    const linked = await findIdentity(db, provider.id, profile.subject);
    if (linked) {
      // Disabled by the directory, which now finds the person active: enabled again.
      if (await restoreIdentity(db, provider, linked)) this.deps.log.info({ provider: provider.slug, user: linked.user_id }, 'account enabled again: its directory entry is active');
      const user = await loginRowById(db, linked.user_id);
      return user && !isDisabled(user) ? user : undefined;
    }
    const holder = profile.email ? await findUserByLogin(db, profile.email) : undefined;
    if (holder) {
      if (!holder.email_verified_at) {
        throw new UpstreamFailure('address_unverified', 403, `An account here already uses ${profile.email}, but its address is not verified, so ${provider.name} cannot sign in to it. Sign in with that account's password and verify its address first.`);
      }
      if (isDisabled(holder)) return undefined;
      await linkIdentity(db, provider, profile, holder, ip);
      return holder;
    }
    if (!provider.allowSignUp) {
      throw new UpstreamFailure('sign_up_closed', 403, `Your ${provider.name} account has no account here, and ${provider.name} is not allowed to make one. Ask a site administrator.`);
    }
    if (!profile.email) throw new UpstreamFailure('no_address', 403, `${provider.name} has no e-mail address for you, which an account here needs. Ask your directory's administrator to add one.`);
    return this.firstSignIn(provider, profile);
  }

  /** The account made at a first sign-in: the directory's username (or a free one like it), name and verified address. */
  private async firstSignIn(provider: UpstreamProvider, profile: UpstreamProfile): Promise<LoginRow> {
    const { db } = this.deps;
    const base = suggestedUsername(profile) || 'user';
    let lastError: unknown;
    for (const username of usernameCandidates(base)) {
      try {
        return await createAccountFromUpstream(db, provider, profile, { username, name: profile.name || username });
      } catch (err) {
        lastError = err;
        // The same person's first sign-in twice at once: the other one made the account.
        const made = await findIdentity(db, provider.id, profile.subject);
        if (made) {
          const user = await loginRowById(db, made.user_id);
          if (user) return user;
        }
        if (err instanceof AppError && err.status === 400 && profile.name) {
          // A name this service's rules refuse: the username stands in for it.
          return createAccountFromUpstream(db, provider, profile, { username, name: username });
        }
        if (!(err instanceof ConflictError && err.field === 'username')) throw err;
      }
    }
    throw lastError;
  }

  /** Checks the linked accounts of every enabled directory whose check is due (claimed by one instance). */
  async checkDue(intervalS: number): Promise<CheckResult[]> {
    const results: CheckResult[] = [];
    for (const provider of await this.providers()) {
      if (await claimCheck(this.deps.db, provider.id, intervalS)) results.push(await this.checkAccounts(provider));
    }
    return results;
  }

  /** Checks one directory's linked accounts now. */
  checkAccounts(provider: UpstreamProvider): Promise<CheckResult> {
    return checkDirectoryAccounts({ ...this.deps, directories: this.directories }, provider);
  }

  async close(): Promise<void> {
    await this.directories.close();
  }
}
