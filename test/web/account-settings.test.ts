import { expect } from 'chai';
import { formatDate } from '../../src/i18n.js';
import { isWellFormedToken } from '../../src/tokens.js';
import { call, expectInvalidToken } from '../helpers/api.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { Browser, signIn, type Page } from '../helpers/browser.js';
import { makeClient, makeUser, type Client, type TestUser } from '../helpers/factories.js';
import { setEmailVerified } from '../helpers/email-verification.js';
import { csrfFrom, fieldError, findOnceKey, formAction } from '../helpers/html.js';
import { authorizeUrl, oauthTokens, refresh, withClockAhead } from '../helpers/oauth.js';

const SCRIPT = '<script>alert(1)</script>';

/** The text of the element with data-testid="new-token", or undefined when the page has none. */
function shownToken(html: string): string | undefined {
  return /data-testid="new-token"[^>]*>([^<]*)</.exec(html)?.[1]?.trim();
}

/** The rows of the tokens table as {id, text}. */
function tokenRows(html: string): Array<{ id: number; html: string }> {
  return [...html.matchAll(/<tr data-testid="token-row" data-token-id="(\d+)">([\s\S]*?)<\/tr>/g)].map((m) => ({ id: Number(m[1]), html: m[2]! }));
}

describeEachProfile('account settings pages', (profile) => {
  const idp = useIdp(profile);
  let client: Client;

  before(async () => {
    client = await makeClient(idp.db);
  });
  const tokenCount = async (userId: number) =>
    Number(((await idp.db('personal_access_tokens').where({ user_id: userId }).count({ n: '*' }).first()) as { n: number | string }).n);

  async function page(browser: Browser, path: string): Promise<string> {
    const res = await browser.get(path).expect(200);
    // Never in a shared cache; a page with a creating form and no secret may be kept for Back.
    expect(res.headers.get('cache-control')).to.match(/^(no-store|private, no-cache)$/);
    return res.text;
  }

  /** The Access tokens form's fields as a person fills them (the CSRF token and one-time key from the page). */
  function tokenForm(html: string, fields: { name: string; scopes?: string[]; expiration?: string }): string {
    const body = new URLSearchParams({ _csrf: csrfFrom(html), _once: findOnceKey(html) ?? '', name: fields.name });
    for (const scope of fields.scopes ?? ['groups:read-only']) body.append('scopes', scope);
    body.set('expiration', fields.expiration ?? '30');
    return body.toString();
  }

  function post(browser: Browser, html: string, body: string): Promise<Page> {
    return browser.request(formAction(html, '/account/settings/tokens'), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body,
    });
  }

  /**
   * Fills and submits the Access tokens form as a person would, and, when it redirects (the token
   * was made), opens the page it leads to: the answer is the page the person sees.
   */
  async function generate(browser: Browser, fields: { name: string; scopes?: string[]; expiration?: string }): Promise<Page> {
    const html = await page(browser, '/account/settings/tokens');
    const res = await post(browser, html, tokenForm(html, fields));
    return res.status === 302 ? browser.follow(res) : res;
  }

  async function signedInUser(): Promise<{ user: TestUser; browser: Browser }> {
    const user = await makeUser(idp.db);
    return { user, browser: await signIn(idp.url, user) };
  }

  describe('signed out', () => {
    for (const path of ['/account/settings', '/account/settings/tokens', '/account/settings/applications']) {
      it(`sends a visitor of ${path} to the sign-in page and back`, async () => {
        const res = await fetch(`${idp.url}${path}`, { redirect: 'manual' });
        expect(res.status).to.equal(302);
        expect(res.headers.get('location')).to.equal(`/login?return_to=${encodeURIComponent(path)}`);
      });
    }

    it('sends a signed-out form post to the sign-in page and makes nothing', async () => {
      const anonymous = new Browser(idp.url);
      await page(anonymous, '/login');
      const before = await idp.db('personal_access_tokens').count({ n: '*' }).first();
      const res = await anonymous.submit('/account/settings/tokens', { name: 'x', scopes: 'groups:read-only', expiration: '30' });
      expect(res.status).to.equal(302);
      expect(res.headers.get('location')).to.match(/^\/login\?return_to=/);
      expect(await idp.db('personal_access_tokens').count({ n: '*' }).first()).to.deep.equal(before);
    });
  });

  describe('layout', () => {
    it('redirects /account/settings to Profile, its first page, and lists every page in the sidebar', async () => {
      const { browser } = await signedInUser();
      const res = await browser.get('/account/settings');
      expect(res.status).to.equal(302);
      expect(res.headers.get('location')).to.equal('/account/settings/profile');
      expect(await page(browser, '/groups')).to.include('<a href="/account/settings/profile" data-testid="account-settings">Account settings</a>');
      const html = await page(browser, '/account/settings/tokens');
      expect(html).to.match(/<nav class="settings-nav" aria-label="Account settings">/);
      expect(html).to.match(/<a href="\/account\/settings\/tokens" aria-current="page">Access tokens<\/a>/);
      expect(html).to.include('<a href="/account/settings/applications">Authorized applications</a>');
      expect(html).to.include('data-testid="account-settings"');
    });

    it('shows the token form: Token name, Scopes, Expiration and Generate token', async () => {
      const { browser } = await signedInUser();
      const html = await page(browser, '/account/settings/tokens');
      expect(html).to.include('<label for="name">Token name</label>');
      expect(html).to.include('<legend>Scopes</legend>');
      expect(html).to.match(/<input type="checkbox" id="scope-groups:read-only" name="scopes" value="groups:read-only">/);
      expect(html).to.match(/<input type="checkbox" id="scope-groups:read-write" name="scopes" value="groups:read-write">/);
      expect(html).to.include('<label for="expiration">Expiration</label>');
      const options = [...html.matchAll(/<option value="([^"]+)"[^>]*>([^<]+)<\/option>/g)].map((m) => [m[1], m[2]]);
      expect(options).to.deep.equal([['7', '7 days'], ['30', '30 days'], ['90', '90 days'], ['365', '365 days'], ['never', 'No expiration']]);
      expect(html).to.include('<button type="submit" class="primary">Generate token</button>');
      expect(html).to.include('data-testid="no-tokens"');
      expect(csrfFrom(html)).to.be.a('string');
    });
  });

  describe('Access tokens', () => {
    it('shows a new token once, with a Copy button and a warning; a reload does not show it again', async () => {
      const { browser } = await signedInUser();
      const form = await page(browser, '/account/settings/tokens');
      const posted = await post(browser, form, tokenForm(form, { name: 'deploy script', scopes: ['groups:read-only'] }));
      // Post/Redirect/Get: the token reaches the next page in a one-time flash, never in the URL.
      expect(posted.status).to.equal(302);
      expect(posted.headers.get('location')).to.equal('/account/settings/tokens?notice=token-created');
      const res = await browser.follow(posted).expect(200);
      expect(res.headers.get('cache-control')).to.include('no-store');
      const html = res.text;
      const token = shownToken(html);
      expect(token && isWellFormedToken(token, 'ha_'), html).to.equal(true);
      expect(html).to.include('<button type="button" data-copy="#new-token">Copy</button>');
      expect(html).to.include('id="new-token"');
      expect(html).to.include('It will not be shown again');

      const reload = await page(browser, '/account/settings/tokens?notice=token-created');
      expect(shownToken(reload)).to.equal(undefined);
      expect(reload).not.to.include(token!);
      expect(reload).to.include('deploy script').and.include('was shown once');
    });

    it('makes one token of a form submitted twice, or 16 times at once, and shows it only the first time', async () => {
      const { user, browser } = await signedInUser();
      const form = await page(browser, '/account/settings/tokens');
      const body = tokenForm(form, { name: 'once' });
      const first = await browser.follow(await post(browser, form, body)).expect(200);
      const token = shownToken(first.text)!;
      const again = await post(browser, form, body);
      expect(again.headers.get('location')).to.equal('/account/settings/tokens?notice=token-repeated');
      const shown = await browser.follow(again).expect(200);
      expect(shownToken(shown.text)).to.equal(undefined);
      expect(shown.text).not.to.include(token);
      expect(shown.text).to.include('was shown once');
      const fresh = await page(browser, '/account/settings/tokens');
      const copies = await Promise.all(Array.from({ length: 16 }, () => post(browser, fresh, tokenForm(fresh, { name: 'parallel' }))));
      expect(copies.map((c) => c.status)).to.deep.equal(Array(16).fill(302));
      expect(copies.filter((c) => c.headers.get('location')!.endsWith('token-created'))).to.have.length(1);
      expect(await tokenCount(user.id)).to.equal(2);
    });

    it('answers a GET at every address its forms post to, with the page the form is on', async () => {
      const { browser } = await signedInUser();
      await browser.get('/account/settings/tokens/new').expect(302, '/account/settings/tokens');
      await browser.get('/account/settings/tokens/1/revoke').expect(302, '/account/settings/tokens');
      await browser.get('/account/settings/applications/abc/revoke').expect(302, '/account/settings/applications');
      await browser.get('/account/settings/sessions/sign-out-others').expect(302, '/account/settings/sessions');
      await browser.get('/account/settings/sessions/abc/sign-out').expect(302, '/account/settings/sessions');
    });

    it('refuses a one-time key issued to another session, making nothing', async () => {
      const { user, browser } = await signedInUser();
      const other = await signedInUser();
      const theirs = findOnceKey(await page(other.browser, '/account/settings/tokens'))!;
      const form = await page(browser, '/account/settings/tokens');
      const body = new URLSearchParams(tokenForm(form, { name: 'borrowed' }));
      body.set('_once', theirs);
      const res = await post(browser, form, body.toString());
      expect(res.status).to.equal(400);
      expect(await tokenCount(user.id)).to.equal(0);
    });

    it('makes a token that works on /apis/v2 as its user, with the chosen scopes', async () => {
      const { user, browser } = await signedInUser();
      // The user's own token gets every field of /user, the address too once verified.
      await setEmailVerified(idp.db, user, true);
      const token = shownToken((await generate(browser, { name: 'api', scopes: ['groups:read-write'] })).text)!;
      const res = await call(idp, '/apis/v2/user', { token });
      expect(res.status, res.text).to.equal(200);
      expect(res.body.data).to.deep.equal({ id: user.id, username: user.username, name: user.name, email: user.email, emailVerified: true });
      expect((await call(idp, '/apis/v2/groups', { token })).status).to.equal(200);
    });

    it('lists name, scopes, created, last used and expiry ("never" for No expiration)', async () => {
      const { browser } = await signedInUser();
      const forever = shownToken((await generate(browser, { name: 'forever', scopes: ['groups:read-only', 'groups:read-write'], expiration: 'never' })).text)!;
      await generate(browser, { name: 'a week', expiration: '7' });
      await call(idp, '/apis/v2/user', { token: forever });

      // Last use is written in the background; wait for it to land.
      let rows: ReturnType<typeof tokenRows> = [];
      for (let i = 0; i < 50; i += 1) {
        rows = tokenRows(await page(browser, '/account/settings/tokens'));
        if (rows.find((r) => r.html.includes('forever'))?.html.match(/<td[^>]*><time[^>]*>[^<]*<\/time><\/td>\s*<td[^>]*><time/)) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(rows).to.have.length(2);
      const [week, ever] = rows; // newest first
      expect(week!.html).to.include('a week');
      expect(week!.html).to.include('<span class="scope">groups:read-only</span>');
      const weekCells = [...week!.html.matchAll(/<td[^>]*>([\s\S]*?)<\/td>/g)].map((m) => m[1]!.trim());
      // The date as the page's language writes it (en: "Nov 28, 2026, 5:42 AM UTC"), the ISO value in datetime.
      const created = /^<time datetime="([^"]+)">([^<]+)<\/time>$/.exec(weekCells[2]!);
      expect(created, weekCells[2]).to.not.equal(null);
      expect(created![2]).to.equal(formatDate(new Date(created![1]!), 'en')).and.match(/ UTC$/);
      expect(weekCells[3]).to.equal('never');
      const expires = /datetime="([^"]+)"/.exec(weekCells[4]!)![1]!;
      expect(Date.parse(expires) - Date.now()).to.be.within(7 * 86_400_000 - 60_000, 7 * 86_400_000 + 60_000);

      expect(ever!.html).to.include('<span class="scope">groups:read-only</span><span class="scope">groups:read-write</span>');
      const everCells = [...ever!.html.matchAll(/<td[^>]*>([\s\S]*?)<\/td>/g)].map((m) => m[1]!.trim());
      expect(everCells[3], 'last used').to.match(/^<time datetime=/);
      expect(everCells[4], 'expires').to.equal('never');
    });

    it('revokes a token with its Revoke button: gone from the list and 401 on the API', async () => {
      const { user, browser } = await signedInUser();
      const token = shownToken((await generate(browser, { name: 'short-lived' })).text)!;
      expect((await call(idp, '/apis/v2/user', { token })).status).to.equal(200);
      const html = await page(browser, '/account/settings/tokens');
      const [row] = tokenRows(html);
      const res = await browser.submit(formAction(html, `/account/settings/tokens/${row!.id}/revoke`));
      expect(res.status).to.equal(302);
      expect(res.headers.get('location')).to.equal('/account/settings/tokens?notice=token-revoked');
      const after = await page(browser, '/account/settings/tokens?notice=token-revoked');
      expect(tokenRows(after)).to.deep.equal([]);
      expect(after).to.include('data-testid="notice"');
      expect(await tokenCount(user.id)).to.equal(0);
      expectInvalidToken(idp, await call(idp, '/apis/v2/user', { token }));
    });

    it('answers 404 for revoking a token of someone else, which keeps working', async () => {
      const { browser } = await signedInUser();
      const other = await signedInUser();
      const token = shownToken((await generate(other.browser, { name: 'theirs' })).text)!;
      const [row] = tokenRows(await page(other.browser, '/account/settings/tokens'));
      await page(browser, '/account/settings/tokens');
      for (const id of [String(row!.id), 'abc', '0']) {
        const res = await browser.submit(`/account/settings/tokens/${id}/revoke`);
        expect(res.status, id).to.equal(404);
      }
      expect((await call(idp, '/apis/v2/user', { token })).status).to.equal(200);
    });

    it('marks an expired token in the list', async () => {
      const { browser } = await signedInUser();
      await generate(browser, { name: 'soon', expiration: '7' });
      const html = await withClockAhead(8 * 86_400_000, () => page(browser, '/account/settings/tokens'));
      expect(tokenRows(html)[0]!.html).to.include('<span class="badge">expired</span>');
    });

    describe('validation', () => {
      it('re-shows the form with the error by Token name and the values kept', async () => {
        const { user, browser } = await signedInUser();
        const res = await generate(browser, { name: '   ', scopes: ['groups:read-write'], expiration: '90' });
        expect(res.status).to.equal(400);
        const html = res.text;
        expect(fieldError(html, 'name')).to.equal('Token name is required');
        expect(html).to.match(/value="groups:read-write" checked>/);
        expect(html).to.match(/value="groups:read-only">/);
        expect(html).to.match(/<option value="90" selected>/);
        expect(shownToken(html)).to.equal(undefined);
        expect(await tokenCount(user.id)).to.equal(0);
      });

      it('shows the error by Scopes when none is chosen', async () => {
        const { user, browser } = await signedInUser();
        const res = await generate(browser, { name: 'no scopes', scopes: [] });
        expect(res.status).to.equal(400);
        const html = res.text;
        expect(fieldError(html, 'scopes')).to.equal('Scopes must include at least one scope');
        expect(html).to.match(/<input id="name" name="name" type="text"\s+value="no scopes"/);
        expect(await tokenCount(user.id)).to.equal(0);
      });

      it('shows the error by Scopes for a scope that is not offered', async () => {
        const { browser } = await signedInUser();
        const res = await generate(browser, { name: 'sneaky', scopes: ['groups:read-only', 'sudo'] });
        expect(res.status).to.equal(400);
        expect(fieldError(res.text, 'scopes')).to.include('Scopes must be among');
      });

      for (const expiration of ['', 'abc', '0', '400', '-1', '1.5']) {
        it(`shows the error by Expiration for "${expiration}"`, async () => {
          const { user, browser } = await signedInUser();
          const res = await generate(browser, { name: 'odd expiry', expiration });
          expect(res.status).to.equal(400);
          expect(fieldError(res.text, 'expiration')).to.be.a('string');
          expect(await tokenCount(user.id)).to.equal(0);
        });
      }

      it('shows the error by Token name for a name over 100 characters', async () => {
        const { browser } = await signedInUser();
        const res = await generate(browser, { name: 'x'.repeat(101) });
        expect(res.status).to.equal(400);
        expect(fieldError(res.text, 'name')).to.equal('Token name must be at most 100 characters');
      });
    });

    it('escapes a token name with a script tag in the list, the new-token box and a re-shown form', async () => {
      const { browser } = await signedInUser();
      const created = (await generate(browser, { name: SCRIPT })).text;
      expect(created).not.to.include(SCRIPT);
      expect(created).to.include('&lt;script&gt;alert(1)&lt;/script&gt;');
      expect(await page(browser, '/account/settings/tokens')).not.to.include(SCRIPT);
      const rejected = (await generate(browser, { name: SCRIPT, scopes: [] })).text;
      expect(rejected).not.to.include(SCRIPT);
    });
  });

  describe('Authorized applications', () => {
    it('says so when the user has authorized nothing', async () => {
      const { browser } = await signedInUser();
      expect(await page(browser, '/account/settings/applications')).to.include('data-testid="no-applications"');
    });

    it('lists an application after a flow: name, group, homepage, scopes and last use', async () => {
      const user = await makeUser(idp.db);
      const { browser } = await oauthTokens(idp.url, client, user, 'openid email groups:read-only');
      const html = await page(browser, '/account/settings/applications');
      const row = new RegExp(`<tr data-testid="application-row" data-client-id="${client.clientId}">([\\s\\S]*?)</tr>`).exec(html)?.[1];
      expect(row, html).to.be.a('string');
      expect(row).to.include('<strong data-testid="application-name">Test App</strong>');
      expect(row).to.include(`<span data-testid="application-group">${client.group.name}</span>`);
      expect(row).to.include('href="https://app.example.test"');
      for (const scope of ['openid', 'email', 'groups:read-only']) expect(row).to.include(`<span class="scope">${scope}</span>`);
      expect(row).to.match(/<td[^>]*><time datetime="[^"]+">[^<]+<\/time><\/td>\s*<td[^>]*><time datetime="[^"]+">/);
      expect(row).to.include(`action="/account/settings/applications/${client.clientId}/revoke"`);
    });

    it('moves Last used forward when the application calls the API with its token', async () => {
      const user = await makeUser(idp.db);
      const { accessToken, browser } = await oauthTokens(idp.url, client, user);
      const lastUsed = async () => {
        const row = (await idp.db('user_grants').where({ user_id: user.id }).first('last_used_at')) as { last_used_at: string | Date };
        return new Date(row.last_used_at).toISOString();
      };
      const consented = await lastUsed();
      await new Promise((r) => setTimeout(r, 10));
      expect((await call(idp, '/apis/v2/user', { token: accessToken })).status).to.equal(200);
      let used = consented;
      for (let i = 0; i < 50 && used === consented; i += 1) {
        await new Promise((r) => setTimeout(r, 20));
        used = await lastUsed();
      }
      expect(Date.parse(used)).to.be.above(Date.parse(consented));
      expect(await page(browser, '/account/settings/applications')).to.include(`<time datetime="${used}">`);
    });

    it('revokes an application: its ho_ token gets 401, its refresh token invalid_grant, and the next flow asks again', async () => {
      const user = await makeUser(idp.db);
      const { accessToken, refreshToken, browser } = await oauthTokens(idp.url, client, user);
      expect((await call(idp, '/apis/v2/user', { token: accessToken })).status).to.equal(200);

      const html = await page(browser, '/account/settings/applications');
      const res = await browser.submit(formAction(html, `/applications/${client.clientId}/revoke`));
      expect(res.status).to.equal(302);
      expect(res.headers.get('location')).to.equal('/account/settings/applications?notice=app-revoked');

      expectInvalidToken(idp, await call(idp, '/apis/v2/user', { token: accessToken }));
      const refreshed = await refresh(idp.url, client, refreshToken);
      expect(refreshed.status).to.equal(400);
      expect(refreshed.body.error).to.equal('invalid_grant');

      const after = await page(browser, '/account/settings/applications?notice=app-revoked');
      expect(after).not.to.include(`data-client-id="${client.clientId}"`);
      expect(after).to.include('data-testid="notice"');
      expect(await idp.db('user_grants').where({ user_id: user.id })).to.deep.equal([]);

      // Still signed in, but the grant is gone: the consent page comes back.
      const again = await browser.follow(authorizeUrl(idp.url, { clientId: client.clientId, redirectUri: client.redirectUri }));
      expect(again.status).to.equal(200);
      const consent = again.text;
      expect(consent).to.include('data-testid="app-name"');
      expect(consent).to.include('/confirm');
    });

    it('leaves the user’s grants of other applications alone', async () => {
      const user = await makeUser(idp.db);
      const other = await makeClient(idp.db);
      const { browser } = await oauthTokens(idp.url, client, user);
      const kept = await oauthTokens(idp.url, other, user);
      const html = await page(browser, '/account/settings/applications');
      await browser.submit(formAction(html, `/applications/${client.clientId}/revoke`));
      expect((await call(idp, '/apis/v2/user', { token: kept.accessToken })).status).to.equal(200);
      expect(await page(browser, '/account/settings/applications')).to.include(`data-client-id="${other.clientId}"`);
    });

    it('leaves another user’s grant of the same application alone', async () => {
      const first = await makeUser(idp.db);
      const second = await makeUser(idp.db);
      const { browser } = await oauthTokens(idp.url, client, first);
      const theirs = await oauthTokens(idp.url, client, second);
      const html = await page(browser, '/account/settings/applications');
      await browser.submit(formAction(html, `/applications/${client.clientId}/revoke`));
      expect((await call(idp, '/apis/v2/user', { token: theirs.accessToken })).status).to.equal(200);
      expect((await refresh(idp.url, client, theirs.refreshToken)).status).to.equal(200);
      expect(await page(theirs.browser, '/account/settings/applications')).to.include(`data-client-id="${client.clientId}"`);
    });

    it('answers 404 for revoking an application the user has not authorized', async () => {
      const { browser } = await signedInUser();
      await page(browser, '/account/settings/applications');
      const res = await browser.submit(`/account/settings/applications/${client.clientId}/revoke`);
      expect(res.status).to.equal(404);
    });
  });

  describe('CSRF', () => {
    it('refuses to generate a token without _csrf (403) and makes none', async () => {
      const { user, browser } = await signedInUser();
      const res = await browser.postForm('/account/settings/tokens', { name: 'forged', scopes: 'groups:read-only', expiration: '30' });
      expect(res.status).to.equal(403);
      expect(shownToken(res.text)).to.equal(undefined);
      expect(await tokenCount(user.id)).to.equal(0);
    });

    it('refuses to revoke a token with a wrong _csrf (403) and keeps it', async () => {
      const { browser } = await signedInUser();
      const token = shownToken((await generate(browser, { name: 'kept' })).text)!;
      const [row] = tokenRows(await page(browser, '/account/settings/tokens'));
      for (const fields of [{}, { _csrf: 'x'.repeat(43) }] as Array<Record<string, string>>) {
        const res = await browser.postForm(`/account/settings/tokens/${row!.id}/revoke`, fields);
        expect(res.status).to.equal(403);
      }
      expect((await call(idp, '/apis/v2/user', { token })).status).to.equal(200);
    });

    it('refuses to revoke an application without _csrf (403) and keeps its tokens', async () => {
      const user = await makeUser(idp.db);
      const { accessToken, browser } = await oauthTokens(idp.url, client, user);
      const res = await browser.postForm(`/account/settings/applications/${client.clientId}/revoke`, {});
      expect(res.status).to.equal(403);
      expect((await call(idp, '/apis/v2/user', { token: accessToken })).status).to.equal(200);
      expect(await idp.db('user_grants').where({ user_id: user.id })).to.have.length(1);
    });
  });
});
