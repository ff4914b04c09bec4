import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import type { Browser, Page } from './browser.js';
import { filled, formOf } from './html.js';

/**
 * A software passkey: what a device's authenticator does for navigator.credentials.create() and
 * .get(), for tests that reach the passkey pages over HTTP rather than in Chromium. It keeps one
 * P-256 key (ES256), answers with attestation "none", and verifies its user (UV), so its answers
 * are checked by the service exactly as a real authenticator's are.
 */
export class SoftPasskey {
  private readonly key: { privateKey: KeyObject; publicKey: KeyObject } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  readonly credentialId = randomBytes(16);
  private counter = 0;
  private userHandle = '';

  constructor(private readonly issuer: string) {}

  private get rpIdHash(): Buffer {
    return createHash('sha256').update(new URL(this.issuer).hostname).digest();
  }

  private clientData(type: 'webauthn.create' | 'webauthn.get', challenge: string): Buffer {
    return Buffer.from(JSON.stringify({ type, challenge, origin: new URL(this.issuer).origin, crossOrigin: false }));
  }

  /** The answer to registration options (`{ challenge, user: { id } }`), as @simplewebauthn/browser posts it. */
  register(options: { challenge: string; user: { id: string } }): string {
    this.userHandle = options.user.id;
    const jwk = this.key.publicKey.export({ format: 'jwk' });
    const coseKey = cbor(new Map<number, unknown>([[1, 2], [3, -7], [-1, 1], [-2, Buffer.from(jwk.x!, 'base64url')], [-3, Buffer.from(jwk.y!, 'base64url')]]));
    const idLength = Buffer.alloc(2);
    idLength.writeUInt16BE(this.credentialId.length);
    // Flags: user present (0x01), user verified (0x04), attested credential data (0x40).
    const authData = Buffer.concat([this.rpIdHash, Buffer.from([0x45]), Buffer.alloc(4), Buffer.alloc(16), idLength, this.credentialId, coseKey]);
    const attestationObject = cbor(new Map<string, unknown>([['fmt', 'none'], ['attStmt', new Map()], ['authData', authData]]));
    const id = this.credentialId.toString('base64url');
    return JSON.stringify({
      id,
      rawId: id,
      type: 'public-key',
      response: { clientDataJSON: this.clientData('webauthn.create', options.challenge).toString('base64url'), attestationObject: attestationObject.toString('base64url'), transports: ['internal'] },
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
    });
  }

  /** The answer to authentication options (`{ challenge }`), signed with the passkey's key. */
  authenticate(options: { challenge: string }): string {
    this.counter += 1;
    const count = Buffer.alloc(4);
    count.writeUInt32BE(this.counter);
    const authData = Buffer.concat([this.rpIdHash, Buffer.from([0x05]), count]);
    const clientDataJSON = this.clientData('webauthn.get', options.challenge);
    const signature = sign('sha256', Buffer.concat([authData, createHash('sha256').update(clientDataJSON).digest()]), this.key.privateKey);
    const id = this.credentialId.toString('base64url');
    return JSON.stringify({
      id,
      rawId: id,
      type: 'public-key',
      response: {
        clientDataJSON: clientDataJSON.toString('base64url'),
        authenticatorData: authData.toString('base64url'),
        signature: signature.toString('base64url'),
        userHandle: this.userHandle,
      },
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
    });
  }
}

/** Account settings → Passkeys in a signed-in `browser`: asks for options as the page's script does, then submits the page's form with the passkey's answer. */
export async function addPasskeyThroughPage(browser: Browser, passkey: SoftPasskey, name: string): Promise<Page> {
  const page = await browser.get('/account/settings/passkeys').expect(200);
  const form = formOf(page.text, '/account/settings/passkeys');
  const options = await browser.postForm('/passkeys/options', { _csrf: form.fields._csrf!, purpose: 'register', uid: '' }).expect(200);
  return browser.postForm(form.action, filled(form, { name, response: passkey.register(JSON.parse(options.text)) }));
}

/** "Sign in with a passkey" on /login in `browser`: options as the page's script asks, then the sign-in form with the answer. */
export async function signInWithPasskey(browser: Browser, passkey: SoftPasskey): Promise<Page> {
  const page = await browser.get('/login').expect(200);
  const form = formOf(page.text, '/login/passkey');
  const options = await browser.postForm('/passkeys/options', { _csrf: form.fields._csrf!, purpose: 'sign-in', uid: '' }).expect(200);
  return browser.postForm(form.action, filled(form, { response: passkey.authenticate(JSON.parse(options.text)) }));
}

/** The few CBOR items (RFC 8949) a passkey's answer needs: integers, byte and text strings, maps. */
function cbor(value: unknown): Buffer {
  const head = (major: number, n: number): Buffer => {
    if (n < 24) return Buffer.from([(major << 5) | n]);
    if (n < 256) return Buffer.from([(major << 5) | 24, n]);
    const b = Buffer.alloc(3);
    b[0] = (major << 5) | 25;
    b.writeUInt16BE(n, 1);
    return b;
  };
  if (typeof value === 'number') return value >= 0 ? head(0, value) : head(1, -1 - value);
  if (Buffer.isBuffer(value)) return Buffer.concat([head(2, value.length), value]);
  if (typeof value === 'string') return Buffer.concat([head(3, Buffer.byteLength(value)), Buffer.from(value)]);
  if (value instanceof Map) return Buffer.concat([head(5, value.size), ...[...value].flatMap(([k, v]) => [cbor(k), cbor(v)])]);
  throw new Error(`no CBOR for ${typeof value}`);
}
