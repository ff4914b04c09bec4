import { expect } from 'chai';
import { mayRemovePasskey, mayUnlink, type WaysIn } from '../../src/policies/sign-in-methods.js';

const ways = (overrides: Partial<WaysIn>): WaysIn => ({ password: false, passkeys: 0, identities: [], ...overrides });

describe('Sign-in methods policy: never the last way in', () => {
  it('lets an identity go while the account has a password or a passkey', () => {
    expect(mayUnlink(ways({ password: true, identities: [{ id: 1, enabled: true }] }), 1)).to.equal(true);
    expect(mayUnlink(ways({ passkeys: 1, identities: [{ id: 1, enabled: true }] }), 1)).to.equal(true);
  });

  it('lets an identity go while another identity of an enabled provider remains, not one of a disabled provider', () => {
    expect(mayUnlink(ways({ identities: [{ id: 1, enabled: true }, { id: 2, enabled: true }] }), 1)).to.equal(true);
    expect(mayUnlink(ways({ identities: [{ id: 1, enabled: true }, { id: 2, enabled: false }] }), 1)).to.equal(false);
  });

  it('keeps the only identity of an account without a password or passkey', () => {
    expect(mayUnlink(ways({ identities: [{ id: 1, enabled: true }] }), 1)).to.equal(false);
  });

  it('lets a passkey go while a password, another passkey or an identity of an enabled provider remains', () => {
    expect(mayRemovePasskey(ways({ passkeys: 1, password: true }))).to.equal(true);
    expect(mayRemovePasskey(ways({ passkeys: 2 }))).to.equal(true);
    expect(mayRemovePasskey(ways({ passkeys: 1, identities: [{ id: 1, enabled: true }] }))).to.equal(true);
    expect(mayRemovePasskey(ways({ passkeys: 1, identities: [{ id: 1, enabled: false }] }))).to.equal(false);
    expect(mayRemovePasskey(ways({ passkeys: 1 }))).to.equal(false);
  });
});
