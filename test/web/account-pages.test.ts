import { expect } from 'chai';
import { addMember } from '../../src/services/groups.js';
import { call } from '../helpers/api.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { Browser, signIn, visit, type Page } from '../helpers/browser.js';
import { groupAccess, makeClient, makeGroup, makeUser, personalToken, type Client, type TestUser } from '../helpers/factories.js';
import { csrfFrom, errorMessage, fieldError, formAction } from '../helpers/html.js';
import { oauthTokens } from '../helpers/oauth.js';

const CHROME = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36';
const FIREFOX = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:128.0) Gecko/20100101 Firefox/128.0';
const NEW_PASSWORD = 'a brand new passphrase';

describeEachProfile('account settings: profile, password, sessions, delete account', (profile) => {
  // Two wrong passwords from one address block the account there: the limits are checked too.
  const idp = useIdp(profile, { RATE_LIMIT_SIGNIN_ACCOUNT_IP: '3/15m' });
  let client: Client;

  before(async () => {
    client = await makeClient(idp.db);
  });

  const db = () => idp.db;
  const newUser = () => makeUser(db());

  /** Opens a page as the person would (200, not cached) and returns its HTML. */
  async function open(browser: Browser, path: string, status = 200): Promise<string> {
    return (await browser.get(path).expect(status)).text;
  }

  /** Submits the form of `page` that posts to an action containing `action`, with the page's CSRF token. */
  async function submit(browser: Browser, page: string, action: string, fields: Record<string, string> = {}): Promise<Page> {
    return browser.submit(formAction(await open(browser, page), action), fields);
  }

  /** A site sign-in from a browser that names itself with `userAgent`. */
  async function signInWith(user: TestUser, userAgent: string): Promise<Browser> {
    const browser = new Browser(idp.url);
    const headers = { 'user-agent': userAgent };
    await browser.request('/login', { headers }).expect(200);
    const body = new URLSearchParams({ _csrf: browser.csrf, login: user.username, password: user.password }).toString();
    await browser.request('/login', { method: 'POST', headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' }, body }).expect(302);
    return browser;
  }

  async function isSignedIn(browser: Browser): Promise<boolean> {
    return (await browser.get('/account/settings/profile')).status === 200;
  }

  async function canSignIn(username: string, password: string): Promise<boolean> {
    const browser = await visit(idp.url);
    return (await browser.submit('/login', { login: username, password })).status === 302;
  }

  describe('signed out', () => {
    for (const path of ['/account/settings/profile', '/account/settings/password', '/account/settings/sessions', '/account/settings/delete']) {
      it(`sends a visitor of ${path} to the sign-in page`, async () => {
        const res = await fetch(`${idp.url}${path}`, { redirect: 'manual' });
        expect(res.status).to.equal(302);
        expect(res.headers.get('location')).to.equal(`/login?return_to=${encodeURIComponent(path)}`);
      });
    }
  });

  describe('Profile', () => {
    it('shows the name and e-mail address, and saves a new name without the password', async () => {
      const user = await newUser();
      const agent = await signIn(idp.url, user);
      const html = await open(agent, '/account/settings/profile');
      expect(html).to.include(`value="${user.email}"`).and.include(`${user.email} is verified`);
      const res = await submit(agent, '/account/settings/profile', '/account/settings/profile', { name: 'Ada Lovelace', email: user.email, current_password: '' });
      expect(res.status).to.equal(302);
      expect(res.headers.get('location')).to.equal('/account/settings/profile?notice=profile-saved');
      expect(await open(agent, res.headers.get('location')!)).to.include('Profile saved.').and.include('value="Ada Lovelace"');
      expect((await db()('users').where({ id: user.id }).first('name')).name).to.equal('Ada Lovelace');
    });

    it('refuses a form without its CSRF token (403) and changes nothing', async () => {
      const user = await newUser();
      const agent = await signIn(idp.url, user);
      const res = await agent.postForm('/account/settings/profile', { name: 'Mallory', email: user.email });
      expect(res.status).to.equal(403);
      expect((await db()('users').where({ id: user.id }).first('name')).name).to.equal(user.name);
    });
  });

  describe('Password', () => {
    it('changes the password, signs out every other session and keeps this one', async () => {
      const user = await newUser();
      const other = await signIn(idp.url, user);
      const agent = await signIn(idp.url, user);
      const res = await submit(agent, '/account/settings/password', '/account/settings/password', {
        current_password: user.password,
        password: NEW_PASSWORD,
        password_confirmation: NEW_PASSWORD,
      });
      expect(res.status).to.equal(302);
      expect(res.headers.get('location')).to.equal('/account/settings/password?notice=password-changed');
      expect(await open(agent, res.headers.get('location')!)).to.include('Every other session was signed out.');
      expect(await isSignedIn(other)).to.equal(false);
      expect(await isSignedIn(agent)).to.equal(true);
      expect(await canSignIn(user.username, user.password)).to.equal(false);
      expect(await canSignIn(user.username, NEW_PASSWORD)).to.equal(true);
    });

    it('shows a wrong current password next to its field, counted by the sign-in limits', async () => {
      const user = await newUser();
      const agent = await signIn(idp.url, user);
      const attempt = () => submit(agent, '/account/settings/password', '/account/settings/password', {
        current_password: 'wrong password',
        password: NEW_PASSWORD,
        password_confirmation: NEW_PASSWORD,
      });
      for (let i = 0; i < 3; i += 1) {
        const res = await attempt();
        expect(res.status).to.equal(400);
        expect(fieldError(res.text, 'current_password')).to.equal('The current password is incorrect.');
      }
      const blocked = await attempt();
      expect(blocked.status).to.equal(429);
      expect(blocked.headers.get('retry-after')).to.match(/^\d+$/);
      expect(fieldError(blocked.text, 'current_password')).to.match(/^Too many failed sign-in attempts/);
      expect(await canSignIn(user.username, NEW_PASSWORD)).to.equal(false);
    });

    it('applies the new-password rules and asks for the same password twice', async () => {
      const user = await newUser();
      const agent = await signIn(idp.url, user);
      const cases: Array<[Record<string, string>, string, string]> = [
        [{ password: 'password123', password_confirmation: 'password123' }, 'password', 'New password is one of the most common passwords; choose another'],
        [{ password: 'short', password_confirmation: 'short' }, 'password', 'New password must be at least 8 characters'],
        [{ password: user.username, password_confirmation: user.username }, 'password', 'New password must not be your username or email'],
        [{ password: NEW_PASSWORD, password_confirmation: `${NEW_PASSWORD}!` }, 'password_confirmation', 'The two passwords do not match'],
      ];
      for (const [fields, field, message] of cases) {
        const res = await submit(agent, '/account/settings/password', '/account/settings/password', { current_password: user.password, ...fields });
        expect(res.status).to.equal(400);
        expect(fieldError(res.text, field), JSON.stringify(fields)).to.equal(message);
      }
      expect(await canSignIn(user.username, user.password)).to.equal(true);
    });
  });

  describe('Sessions', () => {
    it('lists each signed-in browser with its address, a readable user agent and last activity, this one marked', async () => {
      const user = await newUser();
      await signInWith(user, FIREFOX);
      const agent = await signInWith(user, CHROME);
      const html = await open(agent, '/account/settings/sessions');
      const rows = [...html.matchAll(/<tr data-testid="session-row"([^>]*)>([\s\S]*?)<\/tr>/g)].map((m) => ({ current: m[1]!.includes('data-current'), html: m[2]! }));
      expect(rows).to.have.length(2);
      const current = rows.find((r) => r.current)!;
      expect(current.html).to.include('Chrome on Linux').and.include('This browser').and.include('127.0.0.1').and.include('<time');
      const other = rows.find((r) => !r.current)!;
      expect(other.html).to.include('Firefox on Windows').and.include('Sign out');
      expect(current.html).not.to.include('>Sign out<');
    });

    it('signs out one other session: it is signed out on its next page load', async () => {
      const user = await newUser();
      const other = await signInWith(user, FIREFOX);
      const agent = await signInWith(user, CHROME);
      const res = await submit(agent, '/account/settings/sessions', '/sign-out');
      expect(res.status).to.equal(302);
      expect(res.headers.get('location')).to.equal('/account/settings/sessions?notice=session-signed-out');
      expect(await isSignedIn(other)).to.equal(false);
      expect(await isSignedIn(agent)).to.equal(true);
      expect((await open(agent, '/account/settings/sessions')).match(/data-testid="session-row"/g)).to.have.length(1);
    });

    it('signs out all other sessions, the flow\'s sign-ins too, and keeps this one', async () => {
      const user = await newUser();
      const others = [await signIn(idp.url, user), await signIn(idp.url, user)];
      await oauthTokens(idp.url, client, user);
      const agent = await signIn(idp.url, user);
      expect((await open(agent, '/account/settings/sessions')).match(/data-testid="session-row"/g)).to.have.length(4);
      const res = await submit(agent, '/account/settings/sessions', '/sessions/sign-out-others');
      expect(res.status).to.equal(302);
      for (const other of others) expect(await isSignedIn(other)).to.equal(false);
      const html = await open(agent, res.headers.get('location')!);
      expect(html).to.include('Every other session is signed out.');
      expect(html.match(/data-testid="session-row"/g)).to.have.length(1);
    });

    it("answers 404 for a session that is not one of the user's, and signs nothing out", async () => {
      const owner = await newUser();
      const ownersAgent = await signIn(idp.url, owner);
      const [row] = await db()('user_sessions').where({ user_id: owner.id }).select('uid');
      const stranger = await signIn(idp.url, await newUser());
      const html = await open(stranger, '/account/settings/sessions');
      for (const uid of [row.uid, 'no-such-session']) {
        const res = await stranger.postForm(`/account/settings/sessions/${uid}/sign-out`, { _csrf: csrfFrom(html) });
        expect(res.status).to.equal(404);
        expect(errorMessage(res.text)).to.equal('No such session');
      }
      expect(await isSignedIn(ownersAgent)).to.equal(true);
    });
  });

  describe('Delete account', () => {
    it('explains what happens and refuses a last owner, naming and linking the groups', async () => {
      const user = await newUser();
      const group = await makeGroup(db(), user.id, { name: 'Lonely Group' });
      const agent = await signIn(idp.url, user);
      const page = await open(agent, '/account/settings/delete');
      expect(page).to.include('is permanent').and.include('personal access tokens stop working');
      expect(page).to.include(`href="/groups/${group.path}/settings/members" data-testid="owned-group">Lonely Group</a>`);
      const reason = /<div[^>]*data-testid="last-owner"[^>]*>([\s\S]*?)<\/div>/.exec(page)![1]!.replace(/<[^>]+>/g, '').replace(/\s+/g, ' ').trim();
      expect(reason).to.equal('You are the last owner of Lonely Group: add another owner or delete the group first.');
      // The button is disabled, pointing at the reason; the server still refuses a form sent anyway.
      expect(page).to.match(/<button type="submit" class="danger" disabled aria-describedby="last-owner">Delete my account<\/button>/);
      const res = await submit(agent, '/account/settings/delete', '/account/settings/delete', { password: user.password });
      expect(res.status).to.equal(409);
      expect(res.text).to.include('data-testid="last-owner"').and.include('Lonely Group');
      expect(await db()('users').where({ id: user.id }).first('id')).to.not.equal(undefined);
      expect(await isSignedIn(agent)).to.equal(true);
    });

    it('refuses a wrong password next to its field and keeps the account', async () => {
      const user = await newUser();
      const agent = await signIn(idp.url, user);
      const res = await submit(agent, '/account/settings/delete', '/account/settings/delete', { password: 'not my password' });
      expect(res.status).to.equal(400);
      expect(fieldError(res.text, 'password')).to.equal('The current password is incorrect.');
      expect(await isSignedIn(agent)).to.equal(true);
    });

    it('deletes the account: every session, OAuth token and personal token stops working; the audit log shows a deleted user', async () => {
      const user = await newUser();
      const partner = await newUser();
      // A group the user made (audited as its actor) and then shared ownership of.
      const group = await makeGroup(db(), user.id, { name: 'Shared Group' });
      await addMember(db(), await groupAccess(db(), user.id, group.id), { user: partner.username, role: 'owner' });
      const tokens = await oauthTokens(idp.url, client, user);
      const pat = await personalToken(idp.db, user.id);
      const laptop = await signIn(idp.url, user);
      const agent = await signIn(idp.url, user);
      expect((await call(idp, '/apis/v2/user', { token: tokens.accessToken })).status).to.equal(200);

      const res = await submit(agent, '/account/settings/delete', '/account/settings/delete', { password: user.password });
      expect(res.status).to.equal(302);
      expect(res.headers.get('location')).to.equal('/account/deleted');
      expect(await open(agent, '/account/deleted')).to.include('Your account is deleted.');

      for (const browser of [agent, laptop]) expect(await isSignedIn(browser)).to.equal(false);
      for (const token of [tokens.accessToken, pat]) expect((await call(idp, '/apis/v2/user', { token })).status).to.equal(401);
      const refreshed = await fetch(`${idp.url}/login/oauth/access_token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: tokens.refreshToken, client_id: client.clientId, client_secret: client.clientSecret }),
      });
      expect(refreshed.status).to.equal(400);
      expect(await canSignIn(user.username, user.password)).to.equal(false);
      expect(await db()('users').where({ id: user.id }).first('id')).to.equal(undefined);
      expect(await db()('user_sessions').where({ user_id: user.id }).first('uid')).to.equal(undefined);

      const partnerAgent = await signIn(idp.url, partner);
      const audit = await open(partnerAgent, `/groups/${group.path}/settings/audit`);
      const rows = [...audit.matchAll(/<tr data-testid="audit-row">([\s\S]*?)<\/tr>/g)].map((m) => m[1]!);
      const byUser = rows.filter((row) => /group\.create|member\.add/.test(row));
      expect(byUser).to.have.length(2);
      for (const row of byUser) expect(row).to.match(/<td[^>]*>deleted user<\/td>/);
    });
  });
  });
