import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import * as client from 'openid-client';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { Browser, type Page } from '../helpers/browser.js';
import { makeApp, makeGroup, makeUser } from '../helpers/factories.js';
import { errorMessage, filledForm } from '../helpers/html.js';

/**
 * Guessing device user codes at /login/device (RFC 8628 §5.1: eight characters are safe only
 * with a limit). Codes are counted per browser and per address (each 10 in 15 minutes by
 * default), before the library looks them up. Addresses come from X-Forwarded-For (TRUST_PROXY=1).
 */

const ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';

function randomUserCode(): string {
  const chars = [...randomBytes(8)].map((b) => ALPHABET[b % ALPHABET.length]);
  return `${chars.slice(0, 4).join('')}-${chars.slice(4).join('')}`;
}

function postCode(browser: Browser, address: string, action: string, fields: Record<string, string>): Promise<Page> {
  return browser.request(action, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': address },
    body: new URLSearchParams(fields).toString(),
  });
}

/** The code page, and its form filled in with `userCode`. */
async function codeForm(browser: Browser, address: string, userCode: string) {
  const page = await browser.request('/login/device', { headers: { 'x-forwarded-for': address } }).expect(200);
  return filledForm(page.text, '/login/device', { user_code: userCode });
}

const isWrongCode = (page: Page) => page.status === 200 && /This code is not right/.test(errorMessage(page.text) ?? '');

function isRefusal(page: Page): boolean {
  return page.status === 429 && Number(page.headers.get('retry-after')) > 0 && /Too many codes were entered here\. Try again in/.test(page.text) && /<html/i.test(page.text);
}

describeEachProfile('device user code guessing', (profile) => {
  const idp = useIdp(profile, { TRUST_PROXY: '1' });

  it('refuses one browser past 10 codes, from any addresses, with the 429 page: the library never sees the rest, a right code included', async () => {
    const owner = await makeUser(idp.db);
    const group = await makeGroup(idp.db, owner.id);
    const app = await makeApp(idp.db, owner.id, group.id, { deviceFlow: true });
    const config = await client.discovery(new URL(idp.url), app.clientId, app.clientSecret, undefined, { execute: [client.allowInsecureRequests] });
    const device = await client.initiateDeviceAuthorization(config, { scope: 'groups:read-only' });

    // One after another: each answer's form carries the next one-time xsrf (a refusal leaves it unspent).
    const browser = new Browser(idp.url);
    let form = await codeForm(browser, '2001:db8:aa::1', '');
    const answers: Page[] = [];
    for (let i = 0; i < 60; i += 1) {
      const answer = await postCode(browser, `2001:db8:a${i}::1`, form.action, { ...form.fields, user_code: randomUserCode() });
      answers.push(answer);
      if (answer.status === 200) form = filledForm(answer.text, '/login/device');
    }
    const statuses = answers.map((a) => a.status);
    expect(answers.slice(0, 10).every(isWrongCode), statuses.join(' ')).to.equal(true);
    expect(answers.slice(10).every(isRefusal), statuses.join(' ')).to.equal(true);

    // The device's own code, from this browser, is refused before it is looked up: the device still waits.
    const right = await postCode(browser, '2001:db8:bb::1', form.action, { ...form.fields, user_code: device.user_code });
    expect(isRefusal(right), `${right.status} ${right.text.slice(0, 200)}`).to.equal(true);
    const poll = await fetch(`${idp.url}/login/oauth/access_token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code: device.device_code, client_id: app.clientId, client_secret: app.clientSecret }),
    });
    expect(((await poll.json()) as { error: string }).error).to.equal('authorization_pending');
  });

  it('refuses one /64 past 10 codes, however many browsers and addresses of it send them', async () => {
    const answers = await Promise.all(
      Array.from({ length: 60 }, async (_, i) => {
        const address = `2001:db8:cc:1::${(i + 1).toString(16)}`;
        const browser = new Browser(idp.url);
        const form = await codeForm(browser, address, randomUserCode());
        return postCode(browser, address, form.action, form.fields);
      }),
    );
    const statuses = answers.map((a) => a.status);
    expect(answers.filter(isWrongCode).length, statuses.join(' ')).to.equal(10);
    expect(answers.filter(isRefusal).length, statuses.join(' ')).to.equal(50);
    // Another network is not affected.
    const elsewhere = new Browser(idp.url);
    const form = await codeForm(elsewhere, '2001:db8:cc:2::1', randomUserCode());
    expect(isWrongCode(await postCode(elsewhere, '2001:db8:cc:2::1', form.action, form.fields))).to.equal(true);
  });
});
