import { randomBytes, scryptSync } from 'node:crypto';
import { expect } from 'chai';
import { hashPassword, verifyPassword } from '../../src/services/passwords.js';

/** A hash in the stored format, made here with parameters of our choosing. */
function hashWith(password: string, N: number, r: number, p: number): string {
  const salt = randomBytes(16);
  const key = scryptSync(password.normalize('NFKC'), salt, 32, { N, r, p, maxmem: 64 * 1024 * 1024 });
  return ['scrypt', N, r, p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

describe('passwords', () => {
  it('stores the scheme, its parameters, the salt and the key in the hash', async () => {
    const hash = await hashPassword('correct horse battery');
    const [scheme, N, r, p, salt, key, ...rest] = hash.split('$');
    expect(rest).to.deep.equal([]);
    expect(scheme).to.equal('scrypt');
    expect(Number(N)).to.be.at.least(2 ** 15);
    expect(Number(r)).to.be.at.least(8);
    expect(Number(p)).to.be.at.least(1);
    expect(Buffer.from(salt!, 'base64url')).to.have.length(16);
    expect(Buffer.from(key!, 'base64url')).to.have.length(32);
  });

  it('salts each hash', async () => {
    expect(await hashPassword('same password')).to.not.equal(await hashPassword('same password'));
  });

  it('verifies the right password', async () => {
    expect(await verifyPassword('correct horse battery', await hashPassword('correct horse battery'))).to.equal(true);
  });

  it('refuses a wrong password', async () => {
    expect(await verifyPassword('correct horse battery!', await hashPassword('correct horse battery'))).to.equal(false);
  });

  it('verifies with the parameters stored in the hash, not the current ones', async () => {
    const old = hashWith('an older password', 2 ** 12, 8, 1);
    expect(await verifyPassword('an older password', old)).to.equal(true);
    expect(await verifyPassword('another password', old)).to.equal(false);
  });

  it('treats compatibility-equivalent spellings as one password (NFKC)', async () => {
    expect(await verifyPassword('\uFB01nally secret', await hashPassword('finally secret'))).to.equal(true);
  });

  it('refuses a hash of another or a broken format', async () => {
    for (const stored of ['', 'plain', '$2b$10$abcdefghijklmnopqrstuv', 'scrypt$16384$8$1$c2FsdA']) {
      expect(await verifyPassword('whatever123', stored), stored).to.equal(false);
    }
  });
});
