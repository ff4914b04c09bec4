import type { UpstreamKind } from '../../src/services/federation/upstream.js';
import { upstreamKinds } from '../../src/services/federation/kinds.js';

/**
 * A kind of provider for the managing tests only, whatever kinds the build registers: managing is
 * generic over the registry, and this kind's settings (one required, checked; one optional) show
 * that the form, the CLI flags and the validation come from the kind. It signs nobody in.
 */
export const TEST_KIND: UpstreamKind = {
  kind: 'managetest',
  signIn: 'redirect',
  label: 'Managing test kind',
  defaultScopes: ['openid', 'email'],
  usesIdToken: true,
  settings: [
    {
      name: 'issuer',
      label: 'Issuer URL',
      hint: 'The https URL the provider names itself by.',
      required: true,
      parse(value: string): string {
        let url: URL;
        try {
          url = new URL(value);
        } catch {
          throw new Error('Issuer URL must be an absolute https URL');
        }
        if (url.protocol !== 'https:') throw new Error('Issuer URL must be an absolute https URL');
        return url.href.replace(/\/$/, '');
      },
    },
    { name: 'tenant_id', label: 'Tenant', hint: 'The directory to sign in to.', required: false, parse: (value: string) => value.toLowerCase() },
  ],
  configure: () => Promise.reject(new Error('the managing test kind signs nobody in')),
  profile: () => Promise.reject(new Error('the managing test kind signs nobody in')),
};

/** Registers the test kind for the suite (in this process: the tests' server runs here too). */
export function useTestKind(): UpstreamKind {
  before(() => {
    upstreamKinds[TEST_KIND.kind] = TEST_KIND;
  });
  after(() => {
    delete upstreamKinds[TEST_KIND.kind];
  });
  return TEST_KIND;
}
