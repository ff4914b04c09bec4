import { expect } from 'chai';
import type { ParsedMail } from 'mailparser';
import { setSiteAdmin } from '../../src/services/admin.js';
import { PERSONAL_TOKEN_SCOPES } from '../../src/vocabulary.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { Browser, signIn } from '../helpers/browser.js';
import { idp as cli, json } from '../helpers/cli.js';
import { makeUser, type TestUser } from '../helpers/factories.js';
import { withClockAhead } from '../helpers/oauth.js';
import { useMailServer } from '../helpers/smtp.js';
import { atMidStep, codeFor, withTwoFactor } from '../helpers/totp.js';

const FIREFOX = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0';
const SAFARI = 'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15';
const TWO_FACTOR = '/account/settings/two-factor';
const TOKENS = '/account/settings/tokens';

/** A notice's plain-text body says what, when (within the last minute), from which browser and address. */
function expectNotice(mail: ParsedMail, subject: string, what: string | RegExp, browser: string, address: string): void {
  expect(mail.subject).to.equal(subject);
  const text = mail.text ?? '';
  if (typeof what === 'string') expect(text).to.include(what);
  else expect(text).to.match(what);
  const when = /^When: +(.+ UTC)$/m.exec(text)?.[1];
  expect(when, text).to.be.a('string');
  expect(Date.now() - Date.parse(when!.replace(/UTC$/, 'GMT'))).to.be.within(-1_000, 90_000);
  expect(text).to.match(new RegExp(`^Browser: +${browser}$`, 'm'));
  expect(text).to.match(new RegExp(`^Address: +${address.replace(/[.()]/g, '\\$&')}$`, 'm'));
  expect(text).to.include('/forgot-password');
  expect(mail.html || '').to.include(browser.replace(/\\/g, ''));
}

describeEachProfile('Security notices by e-mail', (profile) => {
  const smtp = useMailServer();
  const idp = useIdp(profile, () => ({ SMTP_URL: smtp.url }));
  let user: TestUser;
  let browser: Browser;

  beforeEach(async () => {
    user = await makeUser(idp.db);
    browser = await signIn(new Browser(idp.url, { userAgent: FIREFOX }), user);
  });

  it('two-factor turned on, new recovery codes, turned off: each mailed to the owner as it happens', async () => {
    await atMidStep(async () => {
      const status = await browser.get(TWO_FACTOR).expect(200);
      await browser.fill(status, `${TWO_FACTOR}/setup`).expect(302);
      const setup = await browser.get(`${TWO_FACTOR}/setup`).expect(200);
      const secret = /data-testid="totp-secret">([A-Z2-7 ]+)</.exec(setup.text)![1]!.replace(/ /g, '');
      await browser.fill(setup, `${TWO_FACTOR}/setup/confirm`, { 'Code from your app': await codeFor(secret) }).expect(302, `${TWO_FACTOR}/recovery-codes`);
      await browser.get(`${TWO_FACTOR}/recovery-codes`).expect(200);
      expectNotice(await smtp.next(user.email), 'Two-factor authentication was turned on', 'Two-factor authentication with an authenticator app was turned on for your account.', 'Firefox on Windows', '127.0.0.1');

      await withClockAhead(30_000, async () => {
        const page = await browser.get(`${TWO_FACTOR}/recovery-codes`).expect(200);
        await browser.fill(page, `${TWO_FACTOR}/recovery-codes`, { 'Code from your app': await codeFor(secret) }).expect(302);
      });
      expectNotice(await smtp.next(user.email), 'New recovery codes were made', 'New two-factor recovery codes were made for your account; the old ones no longer work.', 'Firefox on Windows', '127.0.0.1');

      await withClockAhead(60_000, async () => {
        const page = await browser.get(TWO_FACTOR).expect(200);
        await browser.fill(page, `${TWO_FACTOR}/disable`, { 'Code from your app': await codeFor(secret) }).expect(302);
      });
      expectNotice(await smtp.next(user.email), 'Two-factor authentication was turned off', 'Two-factor authentication was turned off for your account', 'Firefox on Windows', '127.0.0.1');
    });
  });

  it('a wrong code changes nothing and mails nothing', async () => {
    const { secret } = await withTwoFactor(idp.db, user);
    const page = await browser.get(TWO_FACTOR).expect(200);
    const right = await codeFor(secret, 5);
    await browser.fill(page, `${TWO_FACTOR}/disable`, { 'Code from your app': right === '000000' ? '111111' : '000000' }).expect(400);
    // A token made afterwards is the next (and only) notice.
    const tokens = await browser.get(TOKENS).expect(200);
    await browser.fill(tokens, `${TOKENS}/new`, { 'Token name': 'after', [`groups:read-only ${PERSONAL_TOKEN_SCOPES['groups:read-only']}`]: 'checked' }).expect(302);
    expect((await smtp.next(user.email)).subject).to.equal('A personal access token was created');
  });

  it('a personal access token made on the page, and one made with the CLI', async () => {
    const page = await browser.get(TOKENS).expect(200);
    await browser.fill(page, `${TOKENS}/new`, { 'Token name': 'deploy <script>', [`groups:read-only ${PERSONAL_TOKEN_SCOPES['groups:read-only']}`]: 'checked' }).expect(302);
    const mail = await smtp.next(user.email);
    expectNotice(mail, 'A personal access token was created', 'A personal access token named "deploy <script>" was created for your account: it can call the API as you.', 'Firefox on Windows', '127.0.0.1');
    expect(mail.html).to.include('deploy &lt;script&gt;');

    const made = json(await cli(idp.database.url, ['token', 'create', '--user', user.username, '--name', 'from the server', '--scope', 'groups:read-only', '--json'], '', { SMTP_URL: smtp.url, ISSUER: idp.url }));
    expect(made.name).to.equal('from the server');
    expectNotice(await smtp.next(user.email), 'A personal access token was created', 'A personal access token named "from the server" was created', 'none: the command line on the server \\(idp\\)', 'the server itself');
  });

  it('a CLI token whose notice cannot be mailed is still made, with a warning line', async () => {
    const run = await cli(idp.database.url, ['token', 'create', '--user', user.username, '--name', 'no mail', '--scope', 'groups:read-only'], '', { SMTP_URL: 'smtp://127.0.0.1:9', ISSUER: idp.url });
    expect(run.code).to.equal(0);
    expect(run.stdout).to.match(/^created personal access token "no mail"/);
    expect(run.stderr).to.match(/^idp: warning: the security notice to u\*\*\*@e\*\*\*\.test was not sent: /m);
    expect((await idp.db('personal_access_tokens').where({ user_id: user.id }).first('name')).name).to.equal('no mail');
  });

  it("an administrator's Reset two-factor, from the administrator's browser and address", async () => {
    await withTwoFactor(idp.db, user);
    const admin = await makeUser(idp.db);
    await setSiteAdmin(idp.db, { userId: 0, ip: null, admin: true }, admin, true);
    const adminBrowser = await signIn(new Browser(idp.url, { userAgent: SAFARI }), admin);
    const page = await adminBrowser.get(`/admin/users/${user.id}`).expect(200);
    await adminBrowser.fill(page, `/admin/users/${user.id}/two-factor-reset`).expect(302);
    expectNotice(await smtp.next(user.email), 'Two-factor authentication was reset by an administrator', /A site administrator reset two-factor authentication for your account/, 'Safari on macOS', '127.0.0.1');
    // The same form sent again (Back, then the button): nothing left to reset, and no notice.
    await adminBrowser.fill(page, `/admin/users/${user.id}/two-factor-reset`).expect(302, `/admin/users/${user.id}?notice=two-factor-off`);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(smtp.countTo(user.email)).to.equal(1);
  });
});
