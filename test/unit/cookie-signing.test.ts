import { createRequire } from 'node:module';
import { expect } from 'chai';
import Cookies from 'cookies';
import { CookieSigner } from '../../src/cookie-signing.js';

// keygrip is what Koa and oidc-provider sign cookies with by default (through `cookies`).
const Keygrip = createRequire(import.meta.url)('keygrip') as (keys: string[]) => { sign(data: string): string; index(data: string, digest: string): number };

describe('cookie signing', () => {
  const keys = ['first-key-0123456789abcdef', 'older-key-0123456789abcdef'];
  const signer = new CookieSigner(keys);

  it('makes exactly the signatures keygrip makes, so cookies signed before still verify', () => {
    const keygrip = Keygrip(keys);
    for (const data of ['_session=abc', 'x=', 'name=välue with spaces and / + =', `long=${'z'.repeat(4000)}`]) {
      expect(signer.sign(data)).to.equal(keygrip.sign(data));
      expect(signer.index(data, keygrip.sign(data))).to.equal(0);
    }
  });

  it('verifies a signature of an older key (rotation) and signs with the first', () => {
    const old = Keygrip([keys[1]!]).sign('s=1');
    expect(signer.index('s=1', old)).to.equal(1);
    expect(signer.verify('s=1', old)).to.equal(true);
    expect(signer.sign('s=1')).to.not.equal(old);
  });

  it('refuses a signature of another key, another value, another length or no string at all', () => {
    const good = signer.sign('s=1');
    expect(signer.index('s=2', good)).to.equal(-1);
    expect(signer.index('s=1', Keygrip(['a-stranger-key']).sign('s=1'))).to.equal(-1);
    expect(signer.index('s=1', good.slice(1))).to.equal(-1);
    expect(signer.index('s=1', `${good}x`)).to.equal(-1);
    expect(signer.index('s=1', '')).to.equal(-1);
    expect(signer.index('s=1', undefined as unknown as string)).to.equal(-1);
  });

  it('is what the cookies library signs and reads signed cookies with', () => {
    const headers: Record<string, string[]> = {};
    const res = { getHeader: (n: string) => headers[n.toLowerCase()], setHeader: (n: string, v: string[]) => (headers[n.toLowerCase()] = v) };
    new Cookies({ headers: {}, connection: {} } as never, res as never, { keys: signer as never }).set('s', '1', { signed: true });
    const sent = headers['set-cookie']!.map((c) => c.split(';')[0]).join('; ');
    expect(sent).to.match(/^s=1; s\.sig=/);
    const read = (cookie: string) => new Cookies({ headers: { cookie }, connection: {} } as never, res as never, { keys: signer as never }).get('s', { signed: true });
    expect(read(sent)).to.equal('1');
    expect(read(sent.replace('s=1', 's=2'))).to.equal(undefined);
  });
});
