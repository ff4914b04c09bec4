import { createRequire } from 'node:module';
import { expect } from 'chai';
import type Provider from 'oidc-provider';
import { KeystoreInternalsError, providerKeystore } from '../../src/provider/keystore.js';

const { version } = createRequire(import.meta.url)('oidc-provider/package.json') as { version: string };

/** Rotation without restarts replaces oidc-provider's internal keystore: a library that keeps it elsewhere stops the start. */
describe("oidc-provider's keystore, as rotation replaces it", () => {
  it('refuses an object that is not a provider of the library, naming the library and its version', () => {
    expect(() => providerKeystore({} as Provider)).to.throw(KeystoreInternalsError, new RegExp(`^oidc-provider ${version.replaceAll('.', '\\.')}: the keystore and the published JWKS are not where they were`));
  });
});
