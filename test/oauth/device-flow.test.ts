import { expect } from 'chai';
import * as client from 'openid-client';
import { describeEachProfile, startIdp, useIdp } from '../helpers/app.js';
import { Browser, type Page } from '../helpers/browser.js';
import { makeApp, makeGroup, makeUser, type TestUser } from '../helpers/factories.js';
import { SCOPES } from '../../src/vocabulary.js';
import { errorMessage, formAction, unescapeHtml } from '../helpers/html.js';
import { tokenRequest } from '../helpers/oauth.js';

const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

/** openid-client over plain http: the test server is on loopback. */
const insecure = { execute: [client.allowInsecureRequests] };

/** The value of the hidden input `name` on a page. */
function hidden(page: Page, name: string): string {
  const match = new RegExp(`name="${name}" value="([^"]*)"`).exec(page.text);
  expect(match, `${name} on ${page.url}: ${page.text.slice(0, 400)}`).to.not.equal(null);
  return match![1]!;
}

/**
 * The person's side of the device flow over HTTP: opens /login/device, enters the code, confirms,
 * signs in when asked, and authorizes (or cancels at consent when `deny`). Returns the last page.
 */
async function enterCode(browser: Browser, userCode: string, person: TestUser, o: { deny?: boolean } = {}): Promise<Page> {
  const entry = await browser.get('/login/device').expect(200);
  expect(entry.text).to.include('data-testid="device-code"');
  const confirm = await browser.postForm('/login/device', { xsrf: hidden(entry, 'xsrf'), user_code: userCode.toLowerCase() }).expect(200);
  expect(confirm.text).to.include('data-testid="device-confirm"');
  let page = await browser.follow(await browser.postForm('/login/device', { xsrf: hidden(confirm, 'xsrf'), user_code: hidden(confirm, 'user_code'), confirm: 'yes' }));
  for (let step = 0; step < 4 && page.url.pathname.startsWith('/interaction/'); step += 1) {
    const signingIn = page.text.includes('name="password"');
    const fields: Record<string, string> = signingIn ? { login: person.username, password: person.password } : {};
    const action = formAction(page.text, signingIn ? '/login' : o.deny ? '/abort' : '/confirm');
    page = await browser.follow(await browser.submit(action, fields));
  }
  return page;
}

/**
 * The device authorization grant (RFC 8628) of an application that enabled it: the device gets
 * a code, the person enters it at /login/device, signs in and consents, and the device's polls
 * get `ho_`/`hr_` tokens; each polling error as RFC 8628 names it; and an application that did
 * not enable it is refused.
 */
describeEachProfile('Device authorization grant', (profile) => {
  const idp = useIdp(profile, { DEVICE_POLL_INTERVAL_S: '1' });
  let owner: TestUser;
  let user: TestUser;
  let device: { clientId: string; clientSecret: string };
  let config: client.Configuration;
  let groupName: string;

  before(async () => {
    owner = await makeUser(idp.db);
    user = await makeUser(idp.db);
    const group = await makeGroup(idp.db, owner.id, { name: 'Living Room Screens' });
    groupName = group.name;
    device = await makeApp(idp.db, owner.id, group.id, { name: 'TV App', deviceFlow: true });
    config = await client.discovery(new URL(idp.url), device.clientId, device.clientSecret, undefined, insecure);
  });

  it('advertises the device authorization endpoint and grant type', () => {
    const metadata = config.serverMetadata();
    expect(metadata.device_authorization_endpoint).to.equal(`${idp.url}/login/oauth/device/code`);
    expect(metadata.grant_types_supported).to.include(DEVICE_GRANT);
  });

  it('runs end to end with openid-client: the person signs in and consents, the device gets ho_/hr_ tokens', async () => {
    const response = await client.initiateDeviceAuthorization(config, { scope: 'openid groups:read-only' });
    expect(response.verification_uri).to.equal(`${idp.url}/login/device`);
    expect(response.user_code).to.match(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
    expect(response.interval).to.equal(1);
    const polled = client.pollDeviceAuthorizationGrant(config, response);
    const done = await enterCode(new Browser(idp.url), response.user_code, user);
    expect(done.text).to.include('data-testid="device-success"');
    expect(done.text).to.include('TV App');
    const tokens = await polled;
    expect(tokens.access_token).to.match(/^ho_/);
    expect(tokens.refresh_token).to.match(/^hr_/);
    expect(tokens.claims()!.sub).to.equal(String(user.id));
    const groups = await client.fetchProtectedResource(config, tokens.access_token, new URL(`${idp.url}/apis/v2/user`), 'GET');
    expect(groups.status).to.equal(200);
    // Listed in Account settings → Authorized applications, as a code-flow grant is.
    expect(await idp.db('user_grants').where({ user_id: user.id, client_id: device.clientId })).to.have.length(1);
    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
    expect(refreshed.access_token).to.match(/^ho_/);
  });

  it('asks for consent even when the person authorized the application before, and its confirmation page names the group and the scopes', async () => {
    const person = await makeUser(idp.db);
    const first = await client.initiateDeviceAuthorization(config, { scope: 'groups:read-only' });
    const firstTokens = client.pollDeviceAuthorizationGrant(config, first);
    await enterCode(new Browser(idp.url), first.user_code, person);
    expect((await firstTokens).access_token).to.match(/^ho_/);

    // Anyone may ask for a code for this application and send it to the person, who has a grant of it.
    const second = await client.initiateDeviceAuthorization(config, { scope: 'openid groups:read-write' });
    const browser = new Browser(idp.url);
    const entry = await browser.get('/login/device').expect(200);
    const confirm = await browser.postForm('/login/device', { xsrf: hidden(entry, 'xsrf'), user_code: second.user_code }).expect(200);
    expect(confirm.text).to.include('data-testid="device-confirm"');
    expect(/data-testid="app-group">([^<]*)</.exec(confirm.text)?.[1]).to.equal(groupName);
    const listed = [...confirm.text.matchAll(/<li><span class="scope">([^<]*)<\/span> ([^<]*)<\/li>/g)].map((m) => `${m[1]} ${unescapeHtml(m[2]!)}`);
    expect(listed).to.deep.equal([`openid ${SCOPES.openid}`, `groups:read-write ${SCOPES['groups:read-write']}`]);

    // Continue, then sign in: the consent page, not a token for the device.
    const signInPage = await browser.follow(await browser.postForm('/login/device', { xsrf: hidden(confirm, 'xsrf'), user_code: hidden(confirm, 'user_code'), confirm: 'yes' }));
    const consent = await browser.follow(await browser.submit(formAction(signInPage.text, '/login'), { login: person.username, password: person.password }));
    expect(consent.status, consent.text.slice(0, 300)).to.equal(200);
    expect(consent.text).to.include('/confirm"');
    expect(consent.text).to.not.include('data-testid="device-success"');
    expect(/data-testid="app-group">([^<]*)</.exec(consent.text)?.[1]).to.equal(groupName);
    const pending = await tokenRequest(idp.url, { form: { grant_type: DEVICE_GRANT, device_code: second.device_code, client_id: device.clientId, client_secret: device.clientSecret } });
    expect(pending.body.error, pending.text).to.equal('authorization_pending');

    // Authorize: now the device gets its token.
    const done = await browser.follow(await browser.submit(formAction(consent.text, '/confirm')));
    expect(done.text).to.include('data-testid="device-success"');
    expect((await client.pollDeviceAuthorizationGrant(config, second)).access_token).to.match(/^ho_/);
  });

  it('shows no words of the client on the consent page: an ignored_scope it sends with its device request is dropped, as at a plain authorize', async () => {
    const words = 'Horizon staff approved this device, call 555 0100 to verify';
    const response = await client.initiateDeviceAuthorization(config, { scope: 'groups:read-only', ignored_scope: words });
    const browser = new Browser(idp.url);
    const entry = await browser.get('/login/device').expect(200);
    const confirm = await browser.postForm('/login/device', { xsrf: hidden(entry, 'xsrf'), user_code: response.user_code }).expect(200);
    const signInPage = await browser.follow(await browser.postForm('/login/device', { xsrf: hidden(confirm, 'xsrf'), user_code: hidden(confirm, 'user_code'), confirm: 'yes' }));
    const consent = await browser.follow(await browser.submit(formAction(signInPage.text, '/login'), { login: user.username, password: user.password })).expect(200);
    expect(consent.text).to.include('/confirm"');
    expect(unescapeHtml(consent.text)).to.not.include('555 0100');
    expect(consent.text).to.not.include('data-testid="ignored-scopes"');
  });

  it('answers authorization_pending until the person approves, and slow_down to a poll within the interval', async () => {
    const response = await client.initiateDeviceAuthorization(config, { scope: 'groups:read-only' });
    const poll = () => tokenRequest(idp.url, { form: { grant_type: DEVICE_GRANT, device_code: response.device_code, client_id: device.clientId, client_secret: device.clientSecret } });
    const first = await poll();
    expect(first.status, first.text).to.equal(400);
    expect(first.body.error).to.equal('authorization_pending');
    const second = await poll();
    expect(second.status, second.text).to.equal(400);
    expect(second.body.error).to.equal('slow_down');
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const third = await poll();
    expect(third.body.error).to.equal('authorization_pending');
  });

  it('answers access_denied when the person cancels at consent, and the page says so', async () => {
    const response = await client.initiateDeviceAuthorization(config, { scope: 'groups:read-only' });
    // Someone who never authorized the application, so consent is asked.
    const page = await enterCode(new Browser(idp.url), response.user_code, await makeUser(idp.db), { deny: true });
    expect(page.text).to.include('data-testid="device-failed"');
    expect(errorMessage(page.text) ?? page.text).to.match(/cancelled/);
    try {
      await client.pollDeviceAuthorizationGrant(config, response);
      expect.fail('the poll succeeded');
    } catch (err) {
      expect((err as { error?: string }).error).to.equal('access_denied');
    }
  });

  it('answers access_denied when the person cancels at the confirmation page', async () => {
    const response = await client.initiateDeviceAuthorization(config, { scope: 'groups:read-only' });
    const browser = new Browser(idp.url);
    const entry = await browser.get('/login/device').expect(200);
    const confirm = await browser.postForm('/login/device', { xsrf: hidden(entry, 'xsrf'), user_code: response.user_code }).expect(200);
    const aborted = await browser.postForm('/login/device', { xsrf: hidden(confirm, 'xsrf'), user_code: response.user_code, abort: 'yes' }).expect(200);
    expect(aborted.text).to.include('data-testid="device-failed"');
    const res = await tokenRequest(idp.url, { form: { grant_type: DEVICE_GRANT, device_code: response.device_code, client_id: device.clientId, client_secret: device.clientSecret } });
    expect(res.body.error).to.equal('access_denied');
  });

  it('says beside the field when a code is wrong, keeping what was typed', async () => {
    const browser = new Browser(idp.url);
    const entry = await browser.get('/login/device').expect(200);
    const wrong = await browser.postForm('/login/device', { xsrf: hidden(entry, 'xsrf'), user_code: 'BBBB-BBBB' }).expect(200);
    expect(wrong.text).to.include('data-testid="device-code"');
    expect(errorMessage(wrong.text) ?? wrong.text).to.match(/not right/);
    expect(wrong.text).to.include('value="BBBB-BBBB"');
  });

  it('answers the device flow\'s resume address in a browser it does not know with a page, not a server error', async () => {
    const page = await new Browser(idp.url).get('/login/device/no-such-interaction');
    expect(page.status, page.text.slice(0, 400)).to.equal(400);
    expect(page.text).to.include('data-testid="device-failed"');
    expect(page.text).to.include('Start again on the device');
  });

  it('refuses an application that did not enable the device flow: unauthorized_client', async () => {
    const group = await makeGroup(idp.db, owner.id);
    const plain = await makeApp(idp.db, owner.id, group.id);
    const plainConfig = await client.discovery(new URL(idp.url), plain.clientId, plain.clientSecret, undefined, insecure);
    try {
      await client.initiateDeviceAuthorization(plainConfig, { scope: 'groups:read-only' });
      expect.fail('the device authorization succeeded');
    } catch (err) {
      expect((err as { error?: string }).error).to.equal('unauthorized_client');
    }
  });
});

describeEachProfile('Device authorization grant, expired codes', (profile) => {
  it('answers expired_token once the device code has outlived DEVICE_CODE_TTL_S', async () => {
    const idp = await startIdp(profile, { DEVICE_CODE_TTL_S: '1', DEVICE_POLL_INTERVAL_S: '1' });
    try {
      const owner = await makeUser(idp.db);
      const group = await makeGroup(idp.db, owner.id);
      const app = await makeApp(idp.db, owner.id, group.id, { deviceFlow: true });
      const config = await client.discovery(new URL(idp.url), app.clientId, app.clientSecret, undefined, insecure);
      const response = await client.initiateDeviceAuthorization(config, { scope: 'groups:read-only' });
      expect(response.expires_in).to.equal(1);
      await new Promise((resolve) => setTimeout(resolve, 2100));
      const res = await tokenRequest(idp.url, { form: { grant_type: DEVICE_GRANT, device_code: response.device_code, client_id: app.clientId, client_secret: app.clientSecret } });
      expect(res.status, res.text).to.equal(400);
      expect(res.body.error).to.equal('expired_token');
      // The person entering the code now is told it expired.
      const browser = new Browser(idp.url);
      const entry = await browser.get('/login/device').expect(200);
      const page = await browser.postForm('/login/device', { xsrf: hidden(entry, 'xsrf'), user_code: response.user_code }).expect(200);
      expect(errorMessage(page.text) ?? page.text).to.match(/expired/);
    } finally {
      await idp.stop();
    }
  });
});
