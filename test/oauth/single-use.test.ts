import { expect } from 'chai';
import { deleteApplication } from '../../src/services/apps.js';
import { call, type ApiResponse } from '../helpers/api.js';
import { describeEachProfile, useIdp, type RunningIdp } from '../helpers/app.js';
import { Browser, signIn } from '../helpers/browser.js';
import { appAccess, type Client, makeClient } from '../helpers/factories.js';
import { formAction } from '../helpers/html.js';
import { authorize, authorizeUrl, basicAuth, callbackOf, tokenRequest } from '../helpers/oauth.js';

/** Single use under concurrency, one grant per user and application, and deleted applications. */

const PARALLEL = 16;

async function redeem(idp: RunningIdp, fixture: Client, code: string): Promise<ApiResponse> {
  return tokenRequest(idp.url, {
    form: { grant_type: 'authorization_code', code, redirect_uri: fixture.redirectUri },
    headers: { authorization: basicAuth(fixture.clientId, fixture.clientSecret) },
  });
}

async function refresh(idp: RunningIdp, fixture: Client, refreshToken: string): Promise<ApiResponse> {
  return tokenRequest(idp.url, {
    form: { grant_type: 'refresh_token', refresh_token: refreshToken },
    headers: { authorization: basicAuth(fixture.clientId, fixture.clientSecret) },
  });
}

async function apiStatus(idp: RunningIdp, accessToken: string): Promise<number> {
  return (await call(idp, '/apis/v2/user', { token: accessToken })).status;
}

/** Signs in in a fresh browser and stops on the consent page; returns the browser and the page's confirm form. */
async function atConsent(idp: RunningIdp, fixture: Client): Promise<{ browser: Browser; confirm: string }> {
  const browser = new Browser(idp.url);
  const login = await browser.follow(authorizeUrl(idp.url, fixture));
  const consent = await browser.follow(await browser.submit(formAction(login.text, '/login'), { login: fixture.user.username, password: fixture.user.password }));
  expect(consent.text).to.include('Authorize');
  return { browser, confirm: formAction(consent.text, '/confirm') };
}

/** Clicks Authorize on a consent page reached by `atConsent`; returns the code. */
async function confirm(fixture: Client, { browser, confirm }: { browser: Browser; confirm: string }): Promise<string> {
  const res = await browser.follow(await browser.submit(confirm), fixture.redirectUri);
  return callbackOf(res, fixture.redirectUri).searchParams.get('code')!;
}

describeEachProfile('single use and one grant per application', (profile) => {
  const idp = useIdp(profile);
  let fixture: Client;

  beforeEach(async () => {
    fixture = await makeClient(idp.db);
  });

  it(`gives one token set for ${PARALLEL} parallel redemptions of one code; the others get invalid_grant`, async () => {
    const code = (await authorize(new Browser(idp.url), fixture, fixture.user)).searchParams.get('code')!;
    const results = await Promise.all(Array.from({ length: PARALLEL }, () => redeem(idp, fixture, code)));
    const won = results.filter((r) => r.status === 200);
    expect(won, JSON.stringify(results.map((r) => r.status))).to.have.length(1);
    for (const lost of results.filter((r) => r.status !== 200)) {
      expect(lost.status).to.equal(400);
      expect(lost.body.error).to.equal('invalid_grant');
    }
    // Requests that arrive after the winner find the code used: that is replay, and the library
    // revokes what the code issued (RFC 6749 §4.1.2), so the winner's set may not outlive it.
  });

  it('keeps the token set of a code redeemed once', async () => {
    const code = (await authorize(new Browser(idp.url), fixture, fixture.user)).searchParams.get('code')!;
    const tokens = await redeem(idp, fixture, code);
    expect(await apiStatus(idp, String(tokens.body.access_token))).to.equal(200);
    expect((await refresh(idp, fixture, String(tokens.body.refresh_token))).status).to.equal(200);
  });

  it(`gives at most one new pair for ${PARALLEL} parallel uses of one refresh token`, async () => {
    const code = (await authorize(new Browser(idp.url), fixture, fixture.user)).searchParams.get('code')!;
    const first = await redeem(idp, fixture, code);
    const results = await Promise.all(Array.from({ length: PARALLEL }, () => refresh(idp, fixture, String(first.body.refresh_token))));
    const won = results.filter((r) => r.status === 200);
    expect(won.length, JSON.stringify(results.map((r) => r.status))).to.be.at.most(1);
    for (const lost of results.filter((r) => r.status !== 200)) {
      expect(lost.status).to.equal(400);
      expect(lost.body.error).to.equal('invalid_grant');
    }
  });

  it('revokes the whole grant when a used refresh token is presented again later', async () => {
    const code = (await authorize(new Browser(idp.url), fixture, fixture.user)).searchParams.get('code')!;
    const first = await redeem(idp, fixture, code);
    const second = await refresh(idp, fixture, String(first.body.refresh_token));
    expect(second.status).to.equal(200);
    const reuse = await refresh(idp, fixture, String(first.body.refresh_token));
    expect(reuse.body.error).to.equal('invalid_grant');
    expect((await refresh(idp, fixture, String(second.body.refresh_token))).body.error).to.equal('invalid_grant');
    expect(await apiStatus(idp, String(second.body.access_token))).to.equal(401);
    const listed = await idp.db('user_grants').where({ user_id: fixture.user.id, client_id: fixture.clientId });
    expect(listed, 'the revoked grant is no longer an authorized application').to.have.length(0);
  });

  it('ends two concurrent consents on one grant, listed once and revoked whole', async () => {
    const [one, two] = await Promise.all([atConsent(idp, fixture), atConsent(idp, fixture)]);
    const [codeOne, codeTwo] = await Promise.all([confirm(fixture, one), confirm(fixture, two)]);
    const [tokensOne, tokensTwo] = [await redeem(idp, fixture, codeOne), await redeem(idp, fixture, codeTwo)];
    expect(tokensOne.status).to.equal(200);
    expect(tokensTwo.status).to.equal(200);
    const listed = await idp.db('user_grants').where({ user_id: fixture.user.id, client_id: fixture.clientId });
    expect(listed).to.have.length(1);

    const settings = await signIn(idp.url, fixture.user);
    const page = (await settings.get('/account/settings/applications')).text;
    expect(page.split(`/account/settings/applications/${fixture.clientId}/revoke`)).to.have.length(2);
    const revoked = await settings.submit(`/account/settings/applications/${fixture.clientId}/revoke`);
    expect(revoked.status).to.equal(302);

    for (const tokens of [tokensOne, tokensTwo]) {
      expect((await refresh(idp, fixture, String(tokens.body.refresh_token))).body.error).to.equal('invalid_grant');
      expect(await apiStatus(idp, String(tokens.body.access_token))).to.equal(401);
    }
  });

  it("refuses a deleted application's access token at the API, and its refresh token", async () => {
    const code = (await authorize(new Browser(idp.url), fixture, fixture.user)).searchParams.get('code')!;
    const tokens = await redeem(idp, fixture, code);
    expect(await apiStatus(idp, String(tokens.body.access_token))).to.equal(200);
    await deleteApplication(idp.db, idp.idp.provider, await appAccess(idp.db, fixture.user.id, fixture.clientId));
    expect(await apiStatus(idp, String(tokens.body.access_token))).to.equal(401);
    expect((await refresh(idp, fixture, String(tokens.body.refresh_token))).status).to.be.oneOf([400, 401]);
  });

  it("refuses an access token whose application is gone even when its grant was never revoked", async () => {
    const code = (await authorize(new Browser(idp.url), fixture, fixture.user)).searchParams.get('code')!;
    const tokens = await redeem(idp, fixture, code);
    // The row alone goes, as if the listing had lost the grant: only the API's own check remains.
    await idp.db('oauth_apps').where({ client_id: fixture.clientId }).delete();
    expect(await apiStatus(idp, String(tokens.body.access_token))).to.equal(401);
  });
});
