import { createHash } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { expect } from 'chai';
import { base62Checksum, digest, generateToken, isWellFormedToken, TOKEN_LENGTH, type TokenPrefix } from '../../src/tokens.js';

/** The tokens' CRC32 checksum, written out independently of src/tokens.ts. */
const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
function base62(n: number, width: number): string {
  let out = '';
  do {
    out = ALPHABET[n % 62] + out;
    n = Math.floor(n / 62);
  } while (n > 0);
  return out.padStart(width, '0');
}
function expectedChecksum(body: string): string {
  return base62(crc32(Buffer.from(body, 'ascii')), 6);
}

/** Replaces the character at `index` with another base62 character. */
function changeAt(token: string, index: number): string {
  const replacement = token[index] === 'a' ? 'b' : 'a';
  return token.slice(0, index) + replacement + token.slice(index + 1);
}

describe('tokens', () => {
  const prefixes: TokenPrefix[] = ['ho_', 'hr_', 'ha_', 'hs_'];

  for (const prefix of prefixes) {
    it(`makes ${prefix} tokens of 39 characters: prefix, 30 base62 characters, 6 checksum characters`, () => {
      const token = generateToken(prefix);
      expect(token).to.have.length(39);
      expect(token).to.match(new RegExp(`^${prefix}[0-9A-Za-z]{36}$`));
      expect(token.slice(33)).to.equal(expectedChecksum(token.slice(3, 33)));
    });
  }

  it('declares the documented length of 39 characters', () => {
    expect(TOKEN_LENGTH).to.equal(39);
  });

  it('draws a different random part each time', () => {
    const tokens = new Set(Array.from({ length: 50 }, () => generateToken('ha_')));
    expect(tokens.size).to.equal(50);
  });

  it('computes the checksum as the base62 CRC-32 of the random part, most significant digit first', () => {
    const body = 'abcdefghijklmnopqrstuvwxyz0123';
    expect(crc32(Buffer.from(body))).to.equal(2154666580);
    expect(base62Checksum(body)).to.equal(expectedChecksum(body)).and.equal('2LolCm');
  });

  it('left-pads a short checksum with 0', () => {
    const body = 'horizon18xxxxxxxxxxxxxxxxxxxxx';
    expect(crc32(Buffer.from(body))).to.be.below(62 ** 5);
    expect(base62Checksum(body)).to.equal(expectedChecksum(body)).and.equal('0VfZ2j');
  });

  it('accepts a token built by hand from the specification', () => {
    const body = 'abcdefghijklmnopqrstuvwxyz0123';
    expect(isWellFormedToken(`hs_${body}${expectedChecksum(body)}`, 'hs_')).to.equal(true);
  });

  it('accepts a generated token with or without its expected prefix', () => {
    const token = generateToken('ho_');
    expect(isWellFormedToken(token)).to.equal(true);
    expect(isWellFormedToken(token, 'ho_')).to.equal(true);
  });

  it('rejects a token with one character of its random part changed', () => {
    const token = generateToken('ho_');
    for (const index of [3, 17, 32]) expect(isWellFormedToken(changeAt(token, index)), `index ${index}`).to.equal(false);
  });

  it('rejects a token with one character of its checksum changed', () => {
    const token = generateToken('ho_');
    for (const index of [33, 38]) expect(isWellFormedToken(changeAt(token, index)), `index ${index}`).to.equal(false);
  });

  it('rejects a token of another kind than the one asked for', () => {
    expect(isWellFormedToken(generateToken('ho_'), 'ha_')).to.equal(false);
  });

  it('rejects an unknown prefix even with a valid checksum', () => {
    const token = generateToken('ho_');
    expect(isWellFormedToken(`hx_${token.slice(3)}`)).to.equal(false);
    expect(isWellFormedToken(`HO_${token.slice(3)}`)).to.equal(false);
  });

  it('rejects a wrong length or a character outside base62', () => {
    const token = generateToken('hr_');
    expect(isWellFormedToken(token.slice(0, -1))).to.equal(false);
    expect(isWellFormedToken(`${token}0`)).to.equal(false);
    expect(isWellFormedToken(`${token.slice(0, 10)}-${token.slice(11)}`)).to.equal(false);
    expect(isWellFormedToken('')).to.equal(false);
  });

  it('stores a SHA-256 digest, never the token', () => {
    const token = generateToken('hs_');
    expect(digest(token)).to.equal(createHash('sha256').update(token).digest('base64url'));
    expect(digest(token)).to.not.include(token.slice(3));
  });
});
