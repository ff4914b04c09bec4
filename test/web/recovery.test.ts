import { expect } from 'chai';
import { call } from '../helpers/api.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { Browser, signIn, type Page } from '../helpers/browser.js';
import { makeClient, makeUser, personalToken, type Client, type TestUser } from '../helpers/factories.js';
import { errorMessage, filled, formOf, formsOf } from '../helpers/html.js';
import { oauthTokens, refresh } from '../helpers/oauth.js';
import { linkIn, useMailServer } from '../helpers/smtp.js';
import { withTwoFactor } from '../helpers/totp.js';
import { addPasskeyThroughPage, signInWithPasskey, SoftPasskey } from '../helpers/webauthn.js';

const NEW_PASSWORD = 'the owner’s new passphrase';

/**
 * Recovery through Forgot password? evicts whoever else holds the account. Someone made an
 * account with another person's address (before addresses had to be proven), added a passkey,
 * a personal access token and an authorized application, and stays signed in; the address's owner
 * then resets the password. An account whose address was never verified is cleared by the reset;
 * a verified one's reset page lists what else reaches the account, with Remove and Remove all.
 */
describeEachProfile('recovery through a password reset', (profile) => {
  const smtp = useMailServer();
  const idp = useIdp(profile, () => ({ SMTP_URL: smtp.url, REQUIRE_VERIFIED_EMAIL: 'false', RATE_LIMIT_RESET_IP: 'off' }));
  let app: Client;

  before(async () => {
    app = await makeClient(idp.db, { name: 'Intruder’s Helper' });
  });

  /** What an intruder leaves on an account: a passkey (through the page), a personal access token, an authorized application's tokens, a signed-in browser. */
  async function leaveWaysBackIn(user: TestUser) {
    const session = await signIn(idp.url, user);
    const passkey = new SoftPasskey(idp.url);
    const added = await addPasskeyThroughPage(session, passkey, 'Intruder’s key');
    expect(added.status, added.text.slice(0, 300)).to.equal(302);
    const token = await personalToken(idp.db, user.id, { name: 'intruder script' });
    const oauth = await oauthTokens(idp.url, app, user, 'groups:read-only');
    // Each works before the reset.
    expect((await signInWithPasskey(new Browser(idp.url), passkey)).status).to.equal(302);
    expect((await call(idp, '/apis/v2/user', { token })).status).to.equal(200);
    expect((await call(idp, '/apis/v2/user', { token: oauth.accessToken })).status).to.equal(200);
    expect((await session.get('/account/settings/profile')).status).to.equal(200);
    return { session, passkey, token, oauth };
  }

  /** Forgot password? for `email` in a new browser, and the reset page of the link that arrives, filled in. */
  async function resetThroughMail(email: string): Promise<{ browser: Browser; done: Page }> {
    const browser = new Browser(idp.url, { userAgent: 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36' });
    const forgot = await browser.get('/forgot-password').expect(200);
    const forgotForm = formOf(forgot.text, '/forgot-password');
    await browser.postForm(forgotForm.action, filled(forgotForm, { email })).expect(302);
    const link = linkIn(await smtp.nextWith(email, 'Reset your password'), idp.url);
    const page = await browser.get(link).expect(200);
    const form = formOf(page.text, '/reset-password');
    await browser.postForm(form.action, filled(form, { password: NEW_PASSWORD, password_confirmation: NEW_PASSWORD })).expect(302, '/reset-password/done');
    return { browser, done: await browser.get('/reset-password/done').expect(200) };
  }

  async function stillWorks(ways: Awaited<ReturnType<typeof leaveWaysBackIn>>) {
    return {
      passkey: (await signInWithPasskey(new Browser(idp.url), ways.passkey)).status === 302,
      token: (await call(idp, '/apis/v2/user', { token: ways.token })).status === 200,
      accessToken: (await call(idp, '/apis/v2/user', { token: ways.oauth.accessToken })).status === 200,
      refreshToken: (await refresh(idp.url, app, ways.oauth.refreshToken)).status === 200,
      session: (await ways.session.get('/account/settings/profile')).status === 200,
    };
  }

  const count = async (table: string, userId: number) => Number(((await idp.db(table).where({ user_id: userId }).count({ n: '*' }).first()) as { n: number | string }).n);

  it('clears an account whose address was never verified: passkeys, two-factor, tokens, grants and sessions go, and the address is verified', async () => {
    const victim = `owner-${Date.now().toString(36)}@example.test`;
    const intruder = await makeUser(idp.db, { email: victim, verified: false });
    const ways = await leaveWaysBackIn(intruder);
    await withTwoFactor(idp.db, intruder);

    const { done } = await resetThroughMail(victim);
    expect(await stillWorks(ways)).to.deep.equal({ passkey: false, token: false, accessToken: false, refreshToken: false, session: false });
    expect(done.text).to.include('data-testid="cleared"').and.include('had never been verified');
    for (const table of ['webauthn_credentials', 'user_totp', 'recovery_codes', 'personal_access_tokens', 'user_grants', 'user_sessions']) {
      expect(await count(table, intruder.id), table).to.equal(0);
    }
    expect((await idp.db('users').where({ id: intruder.id }).first('email_verified_at')).email_verified_at).to.not.equal(null);
    // The owner signs in with the new password alone: the intruder's second factor went too.
    expect((await new Browser(idp.url).get('/login')).status).to.equal(200);
    await signIn(idp.url, { username: victim, password: NEW_PASSWORD });
  });

  it('lists what else reaches a verified account after the reset, and removes each through its own form, then all', async () => {
    const user = await makeUser(idp.db);
    const ways = await leaveWaysBackIn(user);
    const { secret } = await withTwoFactor(idp.db, user);
    expect(secret).to.be.a('string');

    const { browser, done } = await resetThroughMail(user.email);
    expect(done.text).not.to.include('data-testid="cleared"');
    // The reset signed every session out; the passkey and the tokens still work until removed here.
    expect(await stillWorks(ways)).to.deep.equal({ passkey: true, token: true, accessToken: true, refreshToken: true, session: false });
    const intruderAgain = new Browser(idp.url, { userAgent: 'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:128.0) Gecko/20100101 Firefox/128.0' });
    expect((await signInWithPasskey(intruderAgain, ways.passkey)).status).to.equal(302);

    const page = (await browser.get('/reset-password/done').expect(200)).text;
    expect(page).to.include('Intruder’s key').and.include('intruder script').and.include('Intruder’s Helper').and.include('Firefox on Windows');
    expect(page).to.include('data-testid="two-factor-kept"');
    const removeForms = formsOf(page, '/reset-password/done/remove').filter((f) => f.fields.item);
    expect([...new Set(removeForms.map((f) => f.fields.item))].sort()).to.deep.equal(['application', 'passkey', 'session', 'token']);

    // Remove, for the passkey: it no longer signs in, and the page no longer lists it.
    const passkeyForm = removeForms.find((f) => f.fields.item === 'passkey')!;
    await browser.postForm(passkeyForm.action, filled(passkeyForm)).expect(302, '/reset-password/done?notice=removed');
    const after = (await browser.get('/reset-password/done?notice=removed').expect(200)).text;
    expect(after).to.include('Removed.').and.not.include('Intruder’s key');
    expect((await signInWithPasskey(new Browser(idp.url), ways.passkey)).status).to.equal(400);

    // Remove all: the token, the application with its tokens, the session signed in since.
    const all = formOf(after, '/reset-password/done/remove-all');
    await browser.postForm(all.action, filled(all)).expect(302, '/reset-password/done?notice=all-removed');
    expect(await stillWorks(ways)).to.deep.equal({ passkey: false, token: false, accessToken: false, refreshToken: false, session: false });
    expect((await intruderAgain.get('/account/settings/profile')).status).to.equal(302);
    const emptied = (await browser.get('/reset-password/done').expect(200)).text;
    expect(emptied).to.include('data-testid="nothing-left"');
    // Two-factor authentication is never taken off by a reset: the mailbox alone must not turn it off.
    expect(await count('user_totp', user.id)).to.equal(1);
    expect(await count('recovery_codes', user.id)).to.equal(10);
  });

  it('lets only the browser that made the reset remove anything, and only while the password is the one it set', async () => {
    const user = await makeUser(idp.db);
    const token = await personalToken(idp.db, user.id, { name: 'kept token' });
    const { browser, done } = await resetThroughMail(user.email);
    const form = formsOf(done.text, '/reset-password/done/remove').find((f) => f.fields.item === 'token')!;

    const other = new Browser(idp.url);
    expect((await other.get('/reset-password/done').expect(200)).text).not.to.include('kept token');
    await other.get('/forgot-password').expect(200);
    const refused = await other.submit(form.action, { item: 'token', id: form.fields.id! }).expect(403);
    expect(errorMessage(refused.text)).to.include('after a password reset');

    // A bad item or id is a clear answer, not a fault.
    await browser.postForm(form.action, filled(form, { item: 'nonsense' })).expect(400);
    await browser.postForm(form.action, filled(form, { id: '99999999' })).expect(404);

    // A later password change (here, another reset) ends this browser's pass.
    await resetThroughMail(user.email);
    await browser.postForm(form.action, filled(form)).expect(403);
    expect((await call(idp, '/apis/v2/user', { token })).status).to.equal(200);
  });
});
