import { createRequire } from 'node:module';
import type Provider from 'oidc-provider';
import instance from 'oidc-provider/lib/helpers/weak_cache.js';

/**
 * The one module that reaches into oidc-provider's internals, for signing keys that change while
 * the service runs. The library builds its keystore once, at construction, from the `jwks`
 * option, and its JWKS route serves a public copy made then; it offers no way to change either.
 * So both are replaced in place here: the keystore (the object every signing and verifying call
 * selects from; in-place, because the JWT token format holds on to it) is cleared and refilled,
 * and the public copy is rebuilt beside it.
 *
 * The library picks the first key that may sign for an algorithm, and a key whose `key_ops` is
 * `['verify']` may not: so the key that signs now comes first, and every other key (not yet
 * active, or superseded) is marked verify-only and still verifies.
 *
 * features.externalSigningSupport (ExternalSigningKey) was the other candidate: it lets a key
 * object sign however it likes, but the keys are still fixed at construction and so is the
 * published JWKS, so a new key could not be published without a restart. It is also an
 * experimental feature that needs an acknowledgement of each library version.
 *
 * The internals are checked when the provider is built: should a version of the library keep
 * them elsewhere, the service refuses to start, naming the version, rather than serve keys it
 * cannot change.
 */
const LIBRARY = `oidc-provider ${(createRequire(import.meta.url)('oidc-provider/package.json') as { version: string }).version}`;

type Jwk = Record<string, unknown>;

/** The keys to install: the signer first (the only one without `key_ops: ['verify']`), then the others. */
export interface KeystoreSet {
  keys: Jwk[];
  signer: string | undefined;
}

interface InternalKeyStore {
  clear(): void;
  add(key: Jwk): void;
  selectForSign(options: { alg: string; use?: string }): Jwk[];
  selectForVerify(options: { alg: string; kid?: string }): Jwk[];
  [Symbol.iterator](): Iterator<Jwk>;
}

interface Internals {
  keystore: InternalKeyStore;
  jwks: { keys: Jwk[] };
}

export class KeystoreInternalsError extends Error {
  constructor(problem: string) {
    super(`${LIBRARY}: ${problem}; this service replaces the library's keystore to rotate signing keys without a restart (src/provider/keystore.ts) and must be updated for this version`);
  }
}

/** The fields of a signing key that the JWKS publishes (the library's own list, less `key_ops`). */
const PUBLIC_FIELDS = ['kty', 'use', 'kid', 'alg', 'crv', 'e', 'n', 'x', 'x5c', 'y', 'pub'] as const;

function publicPart(jwk: Jwk): Jwk {
  return Object.fromEntries(PUBLIC_FIELDS.filter((field) => jwk[field] !== undefined).map((field) => [field, jwk[field]]));
}

const kidsOf = (keys: Iterable<Jwk>) => [...keys].map((key) => String(key.kid));

function internalsOf(provider: Provider): Internals {
  const internals = instance(provider) as Partial<Internals> | undefined;
  const keystore = internals?.keystore as Partial<InternalKeyStore> | undefined;
  const usable =
    keystore &&
    ['clear', 'add', 'selectForSign', 'selectForVerify'].every((method) => typeof keystore[method as keyof InternalKeyStore] === 'function') &&
    typeof keystore[Symbol.iterator] === 'function' &&
    Array.isArray(internals?.jwks?.keys);
  if (!usable) throw new KeystoreInternalsError('the keystore and the published JWKS are not where they were (instance(provider).keystore with clear/add/selectForSign, instance(provider).jwks.keys)');
  return internals as Internals;
}

export interface ProviderKeystore {
  /** Installs `set` at once: what signs, verifies and is published from the next call on. */
  install(set: KeystoreSet): void;
}

/**
 * The keystore of `provider`. Given `built` (the set the provider was just constructed with), it
 * is first checked to be the one the library built from it, and installed, which publishes the
 * service's own public JWKS.
 */
export function providerKeystore(provider: Provider, built?: KeystoreSet): ProviderKeystore {
  const internals = internalsOf(provider);
  if (built) {
    const expected = kidsOf(built.keys).join();
    if (kidsOf(internals.keystore).join() !== expected || kidsOf(internals.jwks.keys).join() !== expected) {
      throw new KeystoreInternalsError('its keystore does not hold the keys it was configured with');
    }
  }
  const keystore: ProviderKeystore = {
    install(set) {
      const { keystore: store } = internals;
      // Synchronous: no request sees the store between the two.
      store.clear();
      for (const key of set.keys) store.add(structuredClone(key));
      internals.jwks = { keys: set.keys.map(publicPart) };
      const signs = kidsOf(store.selectForSign({ alg: 'RS256', use: 'sig' }));
      if (set.signer !== undefined && (signs.length !== 1 || signs[0] !== set.signer)) {
        throw new KeystoreInternalsError(`its keystore would sign with ${signs.join(', ') || 'no key'} instead of only ${set.signer} (keys marked key_ops ["verify"] are no longer passed over)`);
      }
      const verifies = kidsOf(store.selectForVerify({ alg: 'RS256' }));
      if (set.keys.some((key) => !verifies.includes(String(key.kid)))) {
        throw new KeystoreInternalsError(`its keystore verifies with ${verifies.join(', ') || 'no key'} instead of every key installed`);
      }
    },
  };
  if (built) keystore.install(built);
  return keystore;
}
