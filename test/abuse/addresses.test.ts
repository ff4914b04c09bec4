import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { Browser, type Page } from '../helpers/browser.js';
import { filledForm } from '../helpers/html.js';

/**
 * Per-address limits count an IPv6 client by its /64: a host given a /64 can send from any of
 * its 2^64 addresses. The addresses come from X-Forwarded-For, which a server behind one proxy
 * (TRUST_PROXY=1) believes.
 */
async function signUpFrom(url: string, address: string, name: string): Promise<Page> {
  const browser = new Browser(url, { headers: { 'x-forwarded-for': address } });
  const page = await browser.get('/signup').expect(200);
  const { action, fields } = filledForm(page.text, '/signup', { username: name, email: `${name}@example.test`, name, password: 'a long enough passphrase' });
  return browser.postForm(action, fields);
}

describeEachProfile('per-address limits and IPv6', (profile) => {
  const idp = useIdp(profile, { TRUST_PROXY: '1' });

  it('counts the sign-ups of 12 addresses of one /64 against one limit (the default 10 an hour)', async () => {
    const tag = randomBytes(3).toString('hex');
    const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => signUpFrom(idp.url, `2001:db8:${tag.slice(0, 4)}:7::${(i + 1).toString(16)}`, `v6-${i}-${tag}`)));
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses).to.deep.equal([...Array<number>(10).fill(302), 429, 429]);
    expect(Number(answers.find((a) => a.status === 429)!.headers.get('retry-after'))).to.be.greaterThan(0);
    // Another /64 is another network.
    expect((await signUpFrom(idp.url, `2001:db8:${tag.slice(0, 4)}:8::1`, `v6-other-${tag}`)).status).to.equal(302);
  });

  it('counts an IPv4-mapped IPv6 address as the IPv4 address', async () => {
    const tag = randomBytes(3).toString('hex');
    const octet = 1 + (parseInt(tag.slice(0, 2), 16) % 250);
    for (let i = 0; i < 10; i += 1) {
      const address = i % 2 ? `198.51.100.${octet}` : `::ffff:198.51.100.${octet}`;
      expect((await signUpFrom(idp.url, address, `v4-${i}-${tag}`)).status).to.equal(302);
    }
    expect((await signUpFrom(idp.url, `198.51.100.${octet}`, `v4-last-${tag}`)).status).to.equal(429);
  });
});
