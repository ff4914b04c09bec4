import { createCipheriv, createDecipheriv, randomBytes, scryptSync } from 'node:crypto';

/**
 * Signing and cookie keys at rest: AES-256-GCM under a key derived from KEYS_SECRET (scrypt,
 * once at start), the key's kind bound in as associated data so that a row cannot be moved to
 * the other kind. A sealed value reads `enc:v1:<iv>.<tag>.<ciphertext>` (base64url); a clear one
 * is a JWK (`{…}`) or a base64url cookie key, so the two never look alike.
 */
const PREFIX = 'enc:v1:';
const SALT = 'horizon-id/keys-at-rest/v1';

export class KeysSecretError extends Error {}

export interface KeyCipher {
  seal(kind: string, clear: string): string;
  /** Throws KeysSecretError when the value was sealed under another secret (or altered). */
  open(kind: string, sealed: string): string;
}

export function isSealed(material: string): boolean {
  return material.startsWith(PREFIX);
}

export function keyCipher(secret: string): KeyCipher {
  // N = 2^15, r = 8: about 32 MiB and a fraction of a second, paid once per start.
  const key = scryptSync(secret, SALT, 32, { N: 2 ** 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 });
  const aad = (kind: string) => Buffer.from(`horizon-id keys:${kind}`);
  return {
    seal(kind, clear) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      cipher.setAAD(aad(kind));
      const body = Buffer.concat([cipher.update(clear, 'utf8'), cipher.final()]);
      return `${PREFIX}${[iv, cipher.getAuthTag(), body].map((b) => b.toString('base64url')).join('.')}`;
    },
    open(kind, sealed) {
      const [iv, tag, body] = sealed.slice(PREFIX.length).split('.').map((part) => Buffer.from(part, 'base64url'));
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, iv!);
        decipher.setAAD(aad(kind));
        decipher.setAuthTag(tag!);
        return Buffer.concat([decipher.update(body!), decipher.final()]).toString('utf8');
      } catch {
        throw new KeysSecretError(
          'KEYS_SECRET does not decrypt the signing and cookie keys in the database: they were encrypted with another secret (or altered). Start with the KEYS_SECRET they were encrypted with.',
        );
      }
    },
  };
}

/**
 * Sealing for one kind of secret the service must read again (not only compare): sealed with
 * KEYS_SECRET when one is set, as the signing keys are, and in clear otherwise. `kind` is bound
 * into the encryption, so a value cannot be moved to another kind's row; `what` names it in the
 * error when it is sealed and no KEYS_SECRET is set.
 */
export function secretsOfKind(kind: string, what: string) {
  return {
    seal(cipher: KeyCipher | undefined, secret: string): string {
      return cipher ? cipher.seal(kind, secret) : secret;
    },
    /** Throws KeysSecretError when the value was sealed under another KEYS_SECRET. */
    open(cipher: KeyCipher | undefined, stored: string): string {
      if (!isSealed(stored)) return stored;
      if (!cipher) throw new Error(`${what} is encrypted, and no KEYS_SECRET is set`);
      return cipher.open(kind, stored);
    },
  };
}
