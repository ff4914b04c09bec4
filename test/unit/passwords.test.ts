import { randomBytes, scryptSync } from 'node:crypto';
import { expect } from 'chai';
import { hashPassword, kdfQueue, needsRehash, verifyPassword } from '../../src/services/passwords.js';
import { RetryLaterError, type ValidationError } from '../../src/errors.js';
import { parse } from '../../src/services/rules.js';
import { newUserSchema } from '../../src/services/users.js';

/** A hash in the format used before Argon2id, made here with parameters of our choosing. */
function scryptHash(password: string, N: number, r: number, p: number): string {
  const salt = randomBytes(16);
  const key = scryptSync(password.normalize('NFKC'), salt, 32, { N, r, p, maxmem: 64 * 1024 * 1024 });
  return ['scrypt', N, r, p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

describe('passwords', () => {
  it("hashes with Argon2id at OWASP's parameters, stored as a PHC string with a 16-byte salt", async () => {
    const hash = await hashPassword('correct horse battery');
    const [, algorithm, version, params, salt, key, ...rest] = hash.split('$');
    expect(rest).to.deep.equal([]);
    expect(algorithm).to.equal('argon2id');
    expect(version).to.equal('v=19');
    expect(params).to.equal('m=19456,t=2,p=1');
    expect(Buffer.from(salt!, 'base64')).to.have.length(16);
    expect(Buffer.from(key!, 'base64')).to.have.length(32);
    expect(needsRehash(hash)).to.equal(false);
  });

  it('salts each hash', async () => {
    expect(await hashPassword('same password')).to.not.equal(await hashPassword('same password'));
  });

  it('verifies the right password and refuses a wrong one', async () => {
    const hash = await hashPassword('correct horse battery');
    expect(await verifyPassword('correct horse battery', hash)).to.equal(true);
    expect(await verifyPassword('correct horse battery!', hash)).to.equal(false);
  });

  it('verifies an older scrypt hash with its stored parameters, and asks for a rehash', async () => {
    const old = scryptHash('an older password', 2 ** 12, 8, 1);
    expect(await verifyPassword('an older password', old)).to.equal(true);
    expect(await verifyPassword('another password', old)).to.equal(false);
    expect(needsRehash(old)).to.equal(true);
  });

  it('keeps an Argon2id hash made with other parameters, verifying it with its own', async () => {
    const { hash } = await import('@node-rs/argon2');
    const cheap = await hash('cheap but fine', { algorithm: 2, memoryCost: 8, timeCost: 1, parallelism: 1 });
    expect(await verifyPassword('cheap but fine', cheap)).to.equal(true);
    expect(needsRehash(cheap)).to.equal(false);
  });

  it('treats compatibility-equivalent spellings as one password (NFKC)', async () => {
    expect(await verifyPassword('\uFB01nally secret', await hashPassword('finally secret'))).to.equal(true);
  });

  it('refuses a hash of another or a broken format', async () => {
    for (const stored of ['', 'plain', '$2b$10$abcdefghijklmnopqrstuv', 'scrypt$16384$8$1$c2FsdA', '$argon2id$v=19$m=19456,t=2,p=1$broken']) {
      expect(await verifyPassword('whatever123', stored), stored).to.equal(false);
    }
  });
});

describe('the KDF queue', () => {
  it('runs at most `concurrency` at once and refuses at once past `queue` waiting, with 503 and Retry-After', async () => {
    const queue = kdfQueue({ concurrency: 1, queue: 1 });
    const stored = await hashPassword('correct horse battery');
    const results = await Promise.allSettled([1, 2, 3, 4].map(() => queue.verify('correct horse battery', stored)));
    expect(results.map((r) => r.status)).to.deep.equal(['fulfilled', 'fulfilled', 'rejected', 'rejected']);
    expect(results.slice(0, 2).map((r) => (r as PromiseFulfilledResult<boolean>).value)).to.deep.equal([true, true]);
    const refused = (results[2] as PromiseRejectedResult).reason as RetryLaterError;
    expect(refused).to.be.instanceOf(RetryLaterError);
    expect(refused.status).to.equal(503);
    expect(refused.retryAfterS).to.be.above(0);
  });

  it('hashes and verifies on low-priority worker threads what the main thread hashes and verifies', async () => {
    const queue = kdfQueue({ concurrency: 1, queue: 4 }, { lowPriority: true });
    try {
      const made = await queue.hash('correct horse battery');
      expect(made).to.match(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
      expect(await verifyPassword('correct horse battery', made)).to.equal(true);
      expect(await queue.verify('correct horse battery', await hashPassword('correct horse battery'))).to.equal(true);
      expect(await queue.verify('wrong horse battery', made)).to.equal(false);
      expect(await queue.verify('an older password', scryptHash('an older password', 2 ** 12, 8, 1))).to.equal(true);
    } finally {
      await queue.close();
    }
  });
});

describe('new-password rules', () => {
  const user = { username: 'ada', email: 'ada@example.test', name: '' };
  const refusal = (password: string, who = user) => {
    try {
      parse(newUserSchema, { ...who, password });
      return undefined;
    } catch (err) {
      return { field: (err as ValidationError).field, message: (err as Error).message };
    }
  };

  it('accepts 8 to 256 characters that are not common', () => {
    expect(refusal('correct horse battery')).to.equal(undefined);
    expect(refusal('x'.repeat(200) + 'y'.repeat(56))).to.equal(undefined);
  });

  it('refuses fewer than 8 and more than 256 characters, naming password', () => {
    expect(refusal('short12')).to.deep.equal({ field: 'password', message: 'password must be at least 8 characters' });
    expect(refusal('z'.repeat(257))).to.deep.equal({ field: 'password', message: 'password must be at most 256 characters' });
  });

  it("refuses a password on zxcvbn-ts's common-password list, in any case", () => {
    for (const common of ['password1', 'PASSWORD1', 'iloveyou', '12345678', 'qwertyuiop']) {
      expect(refusal(common)?.message, common).to.equal('password is one of the most common passwords; choose another');
    }
  });

  it('refuses the username or the e-mail address as the password', () => {
    const long = { username: 'adalovelace', email: 'ada.lovelace@example.test', name: '' };
    expect(refusal('AdaLovelace', long)).to.deep.equal({ field: 'password', message: 'password must not be your username or email' });
    expect(refusal('ada.lovelace@example.test', long)?.field).to.equal('password');
  });
});
