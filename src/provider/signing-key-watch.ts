import type { Knex } from 'knex';
import type Provider from 'oidc-provider';
import { listSigningKeyStamps } from '../db/keys.js';
import type { KeyCipher } from '../key-encryption.js';
import type { Logger } from '../log.js';
import { changeVersionsOf } from '../services/change-versions.js';
import { toIso } from '../time.js';
import { ROUTES } from './configuration.js';
import { providerKeystore } from './keystore.js';
import { keystoreSet, nextActivation, readSigningKeys, SIGNING_KEYS_SUBJECT, type SigningKey } from './keys.js';

/**
 * Keeps a running instance's signing keys in step with the database, with no restart: a key
 * added by `idp keys rotate` is published (and verifies) as soon as the instance notices it, and
 * signs from its activation time, switched to by a timer at that moment; a key removed by
 * `idp keys retire` stops being published.
 *
 * The instance notices a change by reading the keys' ids and activation times every POLL_MS (a
 * few rows, never the key material, which is read only for a key it has not seen). With Redis,
 * the CLI also replaces a version there when it changes the keys, and the JWKS route reads it on
 * every request: a relying party that fetches the JWKS right after a rotation finds the new key
 * on every instance.
 */
export const POLL_MS = 2000;

/** setTimeout's longest wait; a later activation is reached by waiting again. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface SigningKeyWatch {
  /** Reads the keys' ids and times now, and the material of any key not seen yet. */
  refresh(): Promise<void>;
  /** Stops the poll and the activation timer. */
  stop(): void;
}

export interface SigningKeyWatchDeps {
  provider: Provider;
  db: Knex;
  cipher: KeyCipher | undefined;
  /** The keys the provider was built with. */
  keys: SigningKey[];
  log: Logger;
}

export function watchSigningKeys({ provider, db, cipher, keys: initial, log }: SigningKeyWatchDeps): SigningKeyWatch {
  const keystore = providerKeystore(provider);
  const versions = changeVersionsOf(db);
  let keys = initial;
  let installed = describe(keys, Date.now());
  let activation: NodeJS.Timeout | undefined;
  let stopped = false;

  /** Installs what should sign and be published now, when that changed, and waits for the next activation. */
  function apply(): void {
    const at = Date.now();
    const now = describe(keys, at);
    if (now !== installed) {
      const set = keystoreSet(keys, at);
      keystore.install(set);
      installed = now;
      log.info({ signing: set.signer, published: set.keys.map((key) => key.kid) }, 'signing keys changed');
    }
    schedule(at);
  }

  function schedule(at: number): void {
    clearTimeout(activation);
    const next = nextActivation(keys, at);
    if (stopped || next === undefined) return;
    // A few milliseconds late rather than early: at the moment itself the key is active.
    activation = setTimeout(() => {
      try {
        apply();
      } catch (err) {
        log.error({ err }, 'switching to the next signing key failed; the keys installed before stay in use');
      }
    }, Math.min(next - at + 5, MAX_TIMER_MS)).unref();
  }

  async function readAndApply(): Promise<void> {
    const stamps = await listSigningKeyStamps(db);
    const known = new Map(keys.map((key) => [key.id, key]));
    const fresh = await readSigningKeys(db, stamps.filter((stamp) => !known.has(stamp.id)).map((stamp) => stamp.id), cipher);
    const byId = new Map([...known, ...fresh.map((key) => [key.id, key] as const)]);
    keys = stamps.flatMap((stamp) => {
      const key = byId.get(stamp.id);
      // Deleted between the two reads: the next poll no longer lists it.
      if (!key) return [];
      return [{ ...key, activeFrom: toIso(stamp.active_from) ?? toIso(stamp.created_at)! }];
    });
    apply();
  }

  let reading: Promise<void> | undefined;
  function refresh(): Promise<void> {
    reading ??= readAndApply().finally(() => (reading = undefined));
    return reading;
  }

  /** A read that starts after any under way, so that it sees a change made after that one began. */
  async function refreshAfresh(): Promise<void> {
    await reading?.catch(() => undefined);
    return refresh();
  }

  // While the database is away every poll fails: said once when it starts, and once when it ends.
  let failing = false;
  const poll = setInterval(() => {
    refresh().then(
      () => {
        if (failing) log.info('reading the signing keys works again');
        failing = false;
      },
      (err: unknown) => {
        if (!failing) log.warn({ err }, 'reading the signing keys failed; the ones read before stay in use until it works again');
        failing = true;
      },
    );
  }, POLL_MS).unref();
  schedule(Date.now());

  if (versions) {
    let seen: string | null | undefined;
    // The JWKS answers with the keys as the database has them since the last change the CLI made.
    provider.use(async (ctx, next) => {
      if (ctx.path === ROUTES.jwks) {
        try {
          const [version] = await versions.read([SIGNING_KEYS_SUBJECT]);
          if (version !== seen) {
            await refreshAfresh();
            seen = version;
          }
        } catch (err) {
          log.warn({ err }, 'checking the signing keys for a change failed; the JWKS answers with the ones read before');
        }
      }
      await next();
    });
  }

  return {
    refresh: refreshAfresh,
    stop() {
      stopped = true;
      clearInterval(poll);
      clearTimeout(activation);
    },
  };
}

/** What is installed at `at`, as one string: the order of the kids and which one signs. */
function describe(keys: readonly SigningKey[], at: number): string {
  const { keys: set, signer } = keystoreSet(keys, at);
  return `${signer}|${set.map((key) => key.kid).join(',')}`;
}
