import { expect } from 'chai';
import { PERSONAL_TOKEN_SCOPES } from '../../src/vocabulary.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { signIn, type Browser } from '../helpers/browser.js';
import { makeUser, type TestUser } from '../helpers/factories.js';
import { errorMessage, parseForms } from '../helpers/html.js';
import { linkIn, useMailServer } from '../helpers/smtp.js';

const TOKENS = '/account/settings/tokens';
const TWO_FACTOR = '/account/settings/two-factor';
const PASSKEYS = '/account/settings/passkeys';
const READ_ONLY = `groups:read-only ${PERSONAL_TOKEN_SCOPES['groups:read-only']}`;

describeEachProfile('Adding a way in needs a verified address (REQUIRE_VERIFIED_EMAIL=true)', (profile) => {
  const smtp = useMailServer();
  const idp = useIdp(profile, () => ({ REQUIRE_VERIFIED_EMAIL: 'true', SMTP_URL: smtp.url }));
  let user: TestUser;
  let browser: Browser;

  beforeEach(async () => {
    user = await makeUser(idp.db, { verified: false });
    expect((await idp.db('users').where({ id: user.id }).first('email_verified_at')).email_verified_at).to.equal(null);
    browser = await signIn(idp.url, user);
  });

  const nothingAdded = async () => {
    expect(await idp.db('personal_access_tokens').where({ user_id: user.id }).first()).to.equal(undefined);
    expect(await idp.db('user_totp').where({ user_id: user.id }).first()).to.equal(undefined);
    expect(await idp.db('webauthn_credentials').where({ user_id: user.id }).first()).to.equal(undefined);
  };

  it('the pages say why, with Resend the link, where the Add buttons would be', async () => {
    for (const [path, what, form] of [
      [PASSKEYS, 'add a passkey', PASSKEYS],
      [TWO_FACTOR, 'turn on two-factor authentication', `${TWO_FACTOR}/setup`],
      [TOKENS, 'create a personal access token', `${TOKENS}/new`],
    ] as const) {
      const page = await browser.get(path).expect(200);
      expect(page.text, path).to.include('data-testid="verify-first"');
      expect(page.text, path).to.include(`before you ${what}: follow the link we sent you.`);
      expect(parseForms(page.text, '/verify-email/resend').length, path).to.be.greaterThan(0);
      expect(parseForms(page.text, form).map((f) => f.action), path).not.to.include(form);
    }
  });

  it('refuses a token, the authenticator app and a passkey with a page that says to verify first, and adds nothing', async () => {
    // The forms as a verified account's pages have them, sent by an unverified one.
    const refusals = [
      await browser.submit(`${TOKENS}/new`, { name: 'early', scopes: 'groups:read-only', expiration: '30', groupAccess: 'all' }).expect(403),
      await browser.submit(`${TWO_FACTOR}/setup`).expect(403),
      await browser.submit(`${TWO_FACTOR}/setup/confirm`, { code: '123456' }).expect(403),
      await browser.submit(PASSKEYS, { name: 'early', response: '{}' }).expect(403),
    ];
    for (const page of refusals) {
      expect(page.text).to.include('<h1>Verify your e-mail address first</h1>');
      expect(errorMessage(page.text)).to.match(/^To (create a personal access token|turn on two-factor authentication|add a passkey), your account needs a verified e-mail address\. Nothing was added\.$/);
      expect(page.text).to.include(user.email);
      expect(parseForms(page.text, '/verify-email/resend')).to.have.length(1);
    }
    await browser.get(`${TWO_FACTOR}/setup`).expect(403);
    const options = await browser.submit('/passkeys/options', { purpose: 'register' }).expect(403);
    expect(JSON.parse(options.text)).to.deep.include({ error: 'email_not_verified' });
    await nothingAdded();

    // Resend the link, from the refusal itself.
    await browser.fill(refusals[0]!, '/verify-email/resend').expect(302, `/verify-email/sent?return_to=${encodeURIComponent(TOKENS)}`);
  });

  it('once the address is verified (Resend the link, then follow it), the same form makes the token', async () => {
    const refused = await browser.get(TOKENS).expect(200);
    await browser.fill(refused, '/verify-email/resend').expect(302);
    const link = linkIn(await smtp.next(user.email), idp.url);
    await browser.get(`${link.pathname}${link.search}`).expect(302);
    const page = await browser.get(TOKENS).expect(200);
    expect(page.text).not.to.include('data-testid="verify-first"');
    await browser.fill(page, `${TOKENS}/new`, { 'Token name': 'verified', [READ_ONLY]: 'checked' }).expect(302, `${TOKENS}?notice=token-created`);
  });
});
