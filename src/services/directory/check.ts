import type { Knex } from 'knex';
import { identitiesOfProvider, type IdentityRow } from '../../db/identities.js';
import { claimProviderCheck } from '../../db/sign-in-providers.js';
import type { Logger } from '../../log.js';
import { now } from '../../time.js';
import type { UpstreamProvider } from '../federation/upstream.js';
import { restoreIdentity, suspendIdentity, type AccountDeps } from './accounts.js';
import { DirectoryUnavailable, type Directories } from './connection.js';

/**
 * The check of a directory's linked accounts, what makes "the person left" take effect without
 * waiting for them to sign in again: each linked person is looked up by their unique ID; one the
 * directory no longer finds (or its user filter no longer matches), or marks disabled, has their
 * account disabled here (sessions ended, grants and tokens revoked); one it finds active again
 * after that is enabled again.
 *
 * A directory that cannot be asked changes nothing. Neither does one that finds none of two or
 * more linked people: that is far likelier a wrong search base or filter than everyone leaving.
 */

export interface CheckResult {
  provider: string;
  checked: number;
  disabled: number;
  enabled: number;
  /** Why nothing was changed, when nothing was. */
  skipped?: 'unavailable' | 'nobody-found';
}

export async function checkDirectoryAccounts(deps: AccountDeps & { directories: Directories; log: Logger }, provider: UpstreamProvider): Promise<CheckResult> {
  const directory = deps.directories.of(provider);
  const linked = await identitiesOfProvider(deps.db, provider.id);
  const result: CheckResult = { provider: provider.slug, checked: linked.length, disabled: 0, enabled: 0 };
  const verdicts: { identity: IdentityRow; verdict: 'active' | 'not_found' | 'disabled' }[] = [];
  try {
    for (const identity of linked) {
      const entry = await directory.findBySubject(identity.subject);
      verdicts.push({ identity, verdict: !entry ? 'not_found' : entry.disabled ? 'disabled' : 'active' });
    }
  } catch (err) {
    if (!(err instanceof DirectoryUnavailable)) throw err;
    deps.log.warn({ provider: provider.slug, reason: err.reason }, 'directory could not be asked: its accounts were not checked');
    return { ...result, skipped: 'unavailable' };
  }
  if (linked.length >= 2 && verdicts.every(({ verdict }) => verdict === 'not_found')) {
    deps.log.error({ provider: provider.slug, linked: linked.length }, 'directory found none of its linked people: no account was disabled (check the search base and the user filter)');
    return { ...result, skipped: 'nobody-found' };
  }
  for (const { identity, verdict } of verdicts) {
    if (verdict === 'active') {
      if (await restoreIdentity(deps.db, provider, identity)) result.enabled += 1;
    } else if (await suspendIdentity(deps, provider, identity, verdict)) {
      result.disabled += 1;
    }
  }
  if (result.disabled || result.enabled) deps.log.info({ ...result }, 'directory accounts checked');
  return result;
}

/**
 * Claims the provider's next check for this instance: true when it was due (never checked, or
 * last checked `intervalS` ago or more), and then no other instance gets it before the interval.
 */
export async function claimCheck(db: Knex, providerId: number, intervalS: number): Promise<boolean> {
  const at = now();
  return claimProviderCheck(db, providerId, new Date(Date.parse(at) - intervalS * 1000).toISOString(), at);
}
