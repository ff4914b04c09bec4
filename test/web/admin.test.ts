import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { markUserDisabled } from '../../src/db/admin.js';
import { setSiteAdmin } from '../../src/services/admin.js';
import { changing } from '../../src/services/change-versions.js';
import { call, expectInvalidToken } from '../helpers/api.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { signIn, visit, type Browser } from '../helpers/browser.js';
import { makeClient, makeUser, personalToken, type Client, type TestUser } from '../helpers/factories.js';
import { errorMessage, fieldError, unescapeHtml } from '../helpers/html.js';
import { oauthTokens, refresh } from '../helpers/oauth.js';
import { linkIn, useMailServer } from '../helpers/smtp.js';

const DISABLED = 'This account is disabled. Contact the site administrator.';
const CLI = { userId: 0, ip: null, admin: true };
const NEW_PASSWORD = 'a brand new passphrase 42';

const unique = () => randomBytes(4).toString('hex');

/** The usernames the users list shows, in order. */
function listedUsernames(html: string): string[] {
  return [...html.matchAll(/data-testid="user-row" data-username="([^"]+)"/g)].map((m) => unescapeHtml(m[1]!));
}

/** The rows of the admin audit log as "actor action target" lines. */
function auditLines(html: string): string[] {
  return [...html.matchAll(/<tr data-testid="audit-row">([\s\S]*?)<\/tr>/g)].map((m) =>
    unescapeHtml(m[1]!.replace(/<time[\s\S]*?<\/time>/, '').replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ').trim()));
}

describeEachProfile('Admin area', (profile) => {
  const smtp = useMailServer();
  const idp = useIdp(profile, () => ({ SMTP_URL: smtp.url }));
  let client: Client;
  let admin: TestUser;
  let site: Browser;

  before(async () => {
    client = await makeClient(idp.db);
    admin = await makeUser(idp.db, { username: `root-${unique()}` });
    await setSiteAdmin(idp.db, CLI, admin, true);
    site = await signIn(idp.url, admin);
  });

  const db = () => idp.db;

  describe('to anyone but a site administrator', () => {
    /** What an address that does not exist answers, for comparison. */
    async function unknownAddress(browser: Browser, method: 'GET' | 'POST', path: string) {
      const res = await browser.request(path, { method, headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: '' });
      return { status: res.status, type: res.headers.get('content-type'), body: res.text };
    }

    it('is an unknown address: the same 404 for every page and form, signed in or not', async () => {
      const visitor = await visit(idp.url);
      const member = await signIn(idp.url, await makeUser(db()));
      const disabledAdmin = await makeUser(db());
      await setSiteAdmin(db(), CLI, disabledAdmin, true);
      const formerAdmin = await signIn(idp.url, disabledAdmin);
      // Only the mark, as disabling makes it (its signing out aside): the refusal below comes from
      // reading the account, which the instance has cached since the sign-in.
      await changing(db(), [`user:${disabledAdmin.id}`], () => markUserDisabled(db(), disabledAdmin.id, new Date().toISOString()));
      for (const who of [visitor, member, formerAdmin]) {
        for (const [method, path] of [['GET', '/admin'], ['GET', '/admin/users'], ['GET', `/admin/users/${admin.id}`], ['GET', '/admin/audit'], ['POST', `/admin/users/${admin.id}/disable`]] as const) {
          const nothing = await unknownAddress(who, method, `/nothing-here${path}`);
          expect(nothing.status).to.equal(404);
          expect(await unknownAddress(who, method, path), `${method} ${path}`).to.deep.equal(nothing);
        }
        // A form with this browser's own token is refused the same way.
        const posted = await who.submit(`/admin/users/${admin.id}/disable`);
        expect(posted.status).to.equal(404);
      }
      expect((await db()('users').where({ id: admin.id }).first('disabled_at')).disabled_at).to.equal(null);
    });

    it('has no Admin link in the header', async () => {
      const member = await signIn(idp.url, await makeUser(db()));
      expect((await member.get('/groups').expect(200)).text).not.to.contain('href="/admin"');
      expect((await site.get('/groups').expect(200)).text).to.contain('href="/admin"');
    });
  });

  describe('users', () => {
    it('searches username, e-mail and name, case-insensitively, taking % and _ literally', async () => {
      const tag = unique();
      const byName = await makeUser(db(), { username: `n-${unique()}`, name: `Ada ${tag.toUpperCase()} Lovelace` });
      const byEmail = await makeUser(db(), { username: `e-${unique()}`, email: `${tag}@mail.example.test` });
      const byUsername = await makeUser(db(), { username: `u-${tag}` });
      await makeUser(db(), { username: `z-${unique()}`, name: '100% pure' });
      const page = await site.get(`/admin/users?q=${tag.toUpperCase()}`).expect(200);
      expect(listedUsernames(page.text)).to.deep.equal([byName.username, byEmail.username, byUsername.username]);
      expect(page.text).to.contain(`value="${tag.toUpperCase()}"`);
      const percent = await site.get(`/admin/users?q=${encodeURIComponent('0% p')}`).expect(200);
      expect(listedUsernames(percent.text)).to.have.length(1);
      const underscore = await site.get(`/admin/users?q=${encodeURIComponent('_')}`).expect(200);
      expect(listedUsernames(underscore.text)).to.deep.equal([]);
      expect(underscore.text).to.contain('data-testid="no-users"');
    });

    it('lists 20 a page, with Previous and Next keeping the search, and any page number is safe', async () => {
      const tag = `p${unique()}`;
      const made = [];
      for (let i = 0; i < 23; i += 1) made.push((await makeUser(db(), { username: `${tag}-${String(i).padStart(2, '0')}` })).username);
      const first = await site.get(`/admin/users?q=${tag}`).expect(200);
      expect(listedUsernames(first.text)).to.deep.equal(made.slice(0, 20));
      expect(first.text).to.contain(`href="/admin/users?q=${tag}&amp;page=2" rel="next"`);
      expect(first.text).not.to.contain('rel="prev"');
      expect(unescapeHtml(/data-testid="page-range">([^<]*)</.exec(first.text)![1]!)).to.equal('1–20 of 23');
      const second = await site.get(`/admin/users?q=${tag}&page=2`).expect(200);
      expect(listedUsernames(second.text)).to.deep.equal(made.slice(20));
      expect(second.text).to.contain(`href="/admin/users?q=${tag}&amp;page=1" rel="prev"`);
      expect(second.text).not.to.contain('rel="next"');
      for (const page of ['0', '-1', 'abc', '1e3', '99999999999999999999', '']) {
        const res = await site.get(`/admin/users?q=${tag}&page=${encodeURIComponent(page)}`).expect(200);
        expect(listedUsernames(res.text), page).to.deep.equal(made.slice(0, 20));
      }
      const beyond = await site.get(`/admin/users?q=${tag}&page=9`).expect(200);
      expect(listedUsernames(beyond.text)).to.deep.equal([]);
      expect(unescapeHtml(/data-testid="page-range">([^<]*)</.exec(beyond.text)![1]!)).to.equal('Page 9 of 2: there are only 23');
      expect(beyond.text).to.contain(`href="/admin/users?q=${tag}&amp;page=2" rel="prev"`);
      const repeated = await site.get(`/admin/users?q=${tag}&q=other&page=2&page=1`).expect(200);
      expect(listedUsernames(repeated.text), 'the first of a repeated parameter').to.deep.equal(made.slice(20));
    });

    it('answers an unknown or malformed user id with 404', async () => {
      for (const id of ['999999', '0', 'abc', '99999999999']) {
        const res = await site.get(`/admin/users/${id}`).expect(404);
        expect(errorMessage(res.text) ?? res.text).to.contain('no such user');
      }
      await site.submit('/admin/users/999999/disable').expect(404);
    });
  });

  describe('disabling and enabling', () => {
    it('asks for confirmation, then signs the account out, revokes its grants and tokens, and refuses its sign-in', async () => {
      const user = await makeUser(db());
      const theirs = await signIn(idp.url, user);
      const pat = await personalToken(idp.db, user.id);
      const { accessToken, refreshToken } = await oauthTokens(idp.url, client, user);

      const page = await site.get(`/admin/users/${user.id}`).expect(200);
      expect(page.text).to.contain(`href="/admin/users/${user.id}/disable"`);
      const confirm = await site.get(`/admin/users/${user.id}/disable`).expect(200);
      expect(confirm.text).to.contain(`action="/admin/users/${user.id}/disable"`);

      await site.submit(`/admin/users/${user.id}/disable`).expect(302, `/admin/users/${user.id}?notice=disabled`);
      const after = await site.get(`/admin/users/${user.id}`).expect(200);
      expect(after.text).to.contain('data-testid="badge-disabled"');
      expect(after.text).to.contain(`action="/admin/users/${user.id}/enable"`);

      await theirs.get('/groups').expect(302, '/login?return_to=%2Fgroups');
      expectInvalidToken(idp, await call(idp, '/apis/v2/user', { token: pat }));
      expectInvalidToken(idp, await call(idp, '/apis/v2/user', { token: accessToken }));
      expect((await refresh(idp.url, client, refreshToken)).body.error).to.equal('invalid_grant');
      const refused = await (await visit(idp.url)).submit('/login', { login: user.username, password: user.password }).expect(403);
      expect(fieldError(refused.text, 'login')).to.equal(DISABLED);

      // Enabling lets them sign in again; what disabling revoked stays revoked.
      await site.submit(`/admin/users/${user.id}/enable`).expect(302, `/admin/users/${user.id}?notice=enabled`);
      await theirs.get('/groups').expect(302);
      await (await signIn(idp.url, user)).get('/groups').expect(200);
      expectInvalidToken(idp, await call(idp, '/apis/v2/user', { token: pat }));
      expectInvalidToken(idp, await call(idp, '/apis/v2/user', { token: accessToken }));
      expect((await refresh(idp.url, client, refreshToken)).body.error).to.equal('invalid_grant');
      expect(await db()('personal_access_tokens').where({ user_id: user.id }).count({ n: '*' }).first()).to.deep.include({ n: profile === 'sqlite' ? 0 : '0' });
      expect(await db()('user_grants').where({ user_id: user.id }).select()).to.deep.equal([]);
    });

    it('says so when the account was disabled or enabled already', async () => {
      const user = await makeUser(db());
      await site.submit(`/admin/users/${user.id}/enable`).expect(302, `/admin/users/${user.id}?notice=already-enabled`);
      await site.submit(`/admin/users/${user.id}/disable`).expect(302);
      await site.submit(`/admin/users/${user.id}/disable`).expect(302, `/admin/users/${user.id}?notice=already-disabled`);
      await site.get(`/admin/users/${user.id}/disable`).expect(302, `/admin/users/${user.id}`);
    });

    it('refuses to let an administrator disable their own account', async () => {
      const page = await site.get(`/admin/users/${admin.id}`).expect(200);
      expect(page.text).not.to.contain(`/admin/users/${admin.id}/disable`);
      const res = await site.submit(`/admin/users/${admin.id}/disable`).expect(409);
      expect(errorMessage(res.text)).to.equal('You cannot disable your own account.');
      await site.get('/admin/users').expect(200);
    });

    it('refuses a form without this session’s token', async () => {
      const user = await makeUser(db());
      await site.postForm(`/admin/users/${user.id}/disable`, {}).expect(403);
      await site.postForm(`/admin/users/${user.id}/disable`, { _csrf: (await visit(idp.url)).csrf }).expect(403);
      expect((await db()('users').where({ id: user.id }).first('disabled_at')).disabled_at).to.equal(null);
    });
  });

  it('sends a password reset link that sets a new password', async () => {
    const user = await makeUser(db());
    await site.submit(`/admin/users/${user.id}/password-reset`).expect(302, `/admin/users/${user.id}?notice=reset-sent`);
    const link = linkIn(await smtp.next(user.email), idp.url);
    // The current password keeps working until the link is used.
    await (await visit(idp.url)).submit('/login', { login: user.username, password: user.password }).expect(302);
    const person = await visit(idp.url, '/forgot-password');
    await person.submit('/reset-password', { token: link.searchParams.get('token')!, password: NEW_PASSWORD, password_confirmation: NEW_PASSWORD }).expect(302);
    await (await visit(idp.url)).submit('/login', { login: user.username, password: NEW_PASSWORD }).expect(302);
  });

  it('records every action in the admin audit log, with the administrator and their address', async () => {
    const user = await makeUser(db());
    await site.submit(`/admin/users/${user.id}/disable`).expect(302);
    await site.submit(`/admin/users/${user.id}/enable`).expect(302);
    await site.submit(`/admin/users/${user.id}/password-reset`).expect(302);
    await smtp.next(user.email);
    const log = await site.get('/admin/audit').expect(200);
    expect(auditLines(log.text).slice(0, 3)).to.deep.equal([
      `${admin.username} Password reset link sent ${user.username} 127.0.0.1`,
      `${admin.username} Account enabled ${user.username} 127.0.0.1`,
      `${admin.username} Account disabled ${user.username} 127.0.0.1`,
    ]);
    expect(auditLines(log.text)).to.include(`CLI Made a site administrator ${admin.username}`);
    expect(log.text).to.include('data-action="user.password_reset.send"');
    // Site events stay out of every group's audit log.
    const rows = await db()('audit_events').whereNotNull('group_id').where({ target: user.username }).select();
    expect(rows).to.deep.equal([]);
  });
});
