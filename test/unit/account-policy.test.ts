import { expect } from 'chai';
import { CONFIRMATION_WINDOW_MS, mayAddCredentials, recentlyConfirmed } from '../../src/policies/account.js';

describe('account policies', () => {
  const at = Date.parse('2026-11-27T10:00:00Z');

  it('counts a proof for ten minutes, and not a moment longer', () => {
    expect(CONFIRMATION_WINDOW_MS).to.equal(600_000);
    expect(recentlyConfirmed(at, at)).to.equal(true);
    expect(recentlyConfirmed(at - 599_999, at)).to.equal(true);
    expect(recentlyConfirmed(at - 600_000, at)).to.equal(false);
  });

  it('counts no proof, a broken time, or one dated far in the future, as none', () => {
    expect(recentlyConfirmed(undefined, at)).to.equal(false);
    expect(recentlyConfirmed(Number.NaN, at)).to.equal(false);
    expect(recentlyConfirmed(at + 5_000, at)).to.equal(true);
    expect(recentlyConfirmed(at + 600_000, at)).to.equal(false);
  });

  it('lets an unverified address add credentials only where the site does not require verified ones', () => {
    expect(mayAddCredentials({ email_verified_at: null }, false)).to.equal(true);
    expect(mayAddCredentials({ email_verified_at: null }, true)).to.equal(false);
    expect(mayAddCredentials({ email_verified_at: '2026-11-27T09:00:00.000Z' }, true)).to.equal(true);
  });
});
