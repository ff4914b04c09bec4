import { expect } from 'chai';
import { toIso } from '../../src/time.js';
import { PERSONAL_TOKEN_SCOPES } from '../../src/vocabulary.js';
import { describeEachProfile, useIdp, type RunningIdp } from '../helpers/app.js';
import { Browser, signIn, visit, type Page } from '../helpers/browser.js';
import { makeUser, type TestUser } from '../helpers/factories.js';
import { ageSession } from '../helpers/sessions.js';
import { errorMessage, fieldError, parseForms } from '../helpers/html.js';
import { atMidStep, codeFor, withTwoFactor } from '../helpers/totp.js';

const TOKENS = '/account/settings/tokens';
const TWO_FACTOR = '/account/settings/two-factor';
const PASSKEYS = '/account/settings/passkeys';
const READ_ONLY = `groups:read-only ${PERSONAL_TOKEN_SCOPES['groups:read-only']}`;

/** Moves the proofs of the session `browser` holds `minutes` into the past (see ageSession). */
const age = (idp: RunningIdp, browser: Browser, minutes: number) => ageSession(idp, browser.cookies().get('idp_session'), minutes);

/** Another computer holding a copy of `victim`'s cookies (a stolen session), having opened `path`. */
async function stolenFrom(victim: Browser, path: string): Promise<{ thief: Browser; page: Page }> {
  const thief = new Browser(victim.base);
  for (const [name, value] of victim.cookies()) thief.cookies().set(name, value);
  return { thief, page: await thief.get(path).expect(200) };
}

const tokensOf = (idp: RunningIdp, user: TestUser) => idp.db('personal_access_tokens').where({ user_id: user.id }).select('name');

describeEachProfile('Re-authentication (Confirm access)', (profile) => {
  const idp = useIdp(profile);
  let user: TestUser;
  let owner: Browser;

  beforeEach(async () => {
    user = await makeUser(idp.db);
    owner = await signIn(idp.url, user);
  });

  describe('a session signed in more than 10 minutes ago, copied to another computer', () => {
    beforeEach(async () => {
      await age(idp, owner, 11);
    });

    it('cannot create a personal access token: the form leads to the prompt and nothing is made', async () => {
      const { thief, page } = await stolenFrom(owner, TOKENS);
      const prompt = await thief.fill(page, `${TOKENS}/new`, { 'Token name': 'exfiltrate', [READ_ONLY]: 'checked' }).expect(403);
      expect(prompt.text).to.include('<h1>Confirm access</h1>');
      expect(prompt.text).to.include('To create a personal access token, enter your password again.');
      expect(await tokensOf(idp, user)).to.deep.equal([]);
      // A wrong password gets the prompt again, and still nothing.
      const wrong = await thief.fill(prompt, `${TOKENS}/new`, { Password: 'a guess at the password' }).expect(400);
      expect(fieldError(wrong.text, 'confirm_password')).to.equal('The current password is incorrect.');
      expect(await tokensOf(idp, user)).to.deep.equal([]);
    });

    it('cannot add a passkey: no registration challenge is given, and an answer posted anyway is not stored', async () => {
      const { thief, page } = await stolenFrom(owner, PASSKEYS);
      // Instead of the form, a link to the prompt that comes back here.
      expect(page.text).to.include('data-testid="confirm-first"');
      expect(parseForms(page.text, PASSKEYS).map((f) => f.action)).not.to.include(PASSKEYS);
      const options = await thief.submit('/passkeys/options', { purpose: 'register' }).expect(403);
      expect(JSON.parse(options.text)).to.deep.include({ error: 'confirmation_required', location: `/account/confirm-access?for=add-passkey&return_to=${encodeURIComponent(PASSKEYS)}` });
      const posted = await thief.submit(PASSKEYS, { name: 'Thief key', response: JSON.stringify({ id: 'x', rawId: 'x', type: 'public-key', response: {} }) }).expect(403);
      expect(posted.text).to.include('To add a passkey, enter your password again.');
      expect(await idp.db('webauthn_credentials').where({ user_id: user.id }).first()).to.equal(undefined);
    });

    it('cannot turn on two-factor authentication nor read the set-up secret', async () => {
      const { thief, page } = await stolenFrom(owner, TWO_FACTOR);
      const prompt = await thief.fill(page, `${TWO_FACTOR}/setup`).expect(403);
      expect(prompt.text).to.include('To turn on two-factor authentication, enter your password again.');
      expect(await idp.db('user_totp').where({ user_id: user.id }).first()).to.equal(undefined);
      // The set-up page (its QR code and secret) sends it to the prompt and back.
      await thief.get(`${TWO_FACTOR}/setup`).expect(302, `/account/confirm-access?for=turn-on-two-factor&return_to=${encodeURIComponent(`${TWO_FACTOR}/setup`)}`);
      // The confirming form too: a code typed there is not written into the prompt's page.
      const confirming = await thief.submit(`${TWO_FACTOR}/setup/confirm`, { code: '123456' }).expect(403);
      expect(parseForms(confirming.text, `${TWO_FACTOR}/setup/confirm`)[0]!.controls.map((c) => c.name)).to.deep.equal(['_csrf', 'confirm_password']);
      expect(await idp.db('user_totp').where({ user_id: user.id }).first()).to.equal(undefined);
    });

    it('goes on with the interrupted form once the password is confirmed on the prompt, and then asks no more', async () => {
      const { page } = await stolenFrom(owner, TOKENS);
      const prompt = await owner.fill(page, `${TOKENS}/new`, { 'Token name': 'deploy', [READ_ONLY]: 'checked', Expiration: '7' }).expect(403);
      // The prompt carries the form's fields, never its CSRF token twice nor any password.
      const [form] = parseForms(prompt.text, `${TOKENS}/new`);
      expect(form!.controls.filter((c) => c.name === '_csrf')).to.have.length(1);
      expect(form!.controls.map((c) => `${c.name}=${c.type === 'password' ? '' : c.value}`)).to.include.members(['name=deploy', 'scopes=groups:read-only', 'expiration=7', 'confirm_password=']);
      await owner.fill(prompt, `${TOKENS}/new`, { Password: user.password }).expect(302, `${TOKENS}?notice=token-created`);
      const shown = await owner.get(TOKENS).expect(200);
      expect(shown.text).to.match(/data-testid="new-token">ha_[0-9A-Za-z]{36}</);
      const [made] = await idp.db('personal_access_tokens').where({ user_id: user.id }).select('name', 'scopes', 'expires_at');
      expect(made).to.include({ name: 'deploy', scopes: 'groups:read-only' });
      expect((Date.parse(toIso(made.expires_at)!) - Date.now()) / 86_400_000).to.be.within(6.9, 7.1);
      // Confirmed: this session makes the next one without the prompt.
      const again = await owner.get(TOKENS).expect(200);
      await owner.fill(again, `${TOKENS}/new`, { 'Token name': 'second', [READ_ONLY]: 'checked' }).expect(302, `${TOKENS}?notice=token-created`);
      expect((await tokensOf(idp, user)).map((t) => t.name)).to.have.members(['deploy', 'second']);
    });

    it('turns two-factor on after the prompt: the set-up goes on from where it was asked', async () => {
      const page = await owner.get(TWO_FACTOR).expect(200);
      const prompt = await owner.fill(page, `${TWO_FACTOR}/setup`).expect(403);
      await owner.fill(prompt, `${TWO_FACTOR}/setup`, { Password: user.password }).expect(302, `${TWO_FACTOR}/setup`);
      const setup = await owner.get(`${TWO_FACTOR}/setup`).expect(200);
      const secret = /data-testid="totp-secret">([A-Z2-7 ]+)</.exec(setup.text)![1]!.replace(/ /g, '');
      await atMidStep(async () => {
        await owner.fill(setup, `${TWO_FACTOR}/setup/confirm`, { 'Code from your app': await codeFor(secret) }).expect(302, `${TWO_FACTOR}/recovery-codes`);
      });
      expect((await idp.db('user_totp').where({ user_id: user.id }).first()).confirmed_at).to.not.equal(null);
    });

    it('opens a page that starts a change through the prompt and back', async () => {
      const away = await owner.get(`${TWO_FACTOR}/setup`).expect(302);
      const prompt = await owner.get(away.headers.get('location')!).expect(200);
      expect(prompt.text).to.include('To turn on two-factor authentication, enter your password again.');
      await owner.fill(prompt, '/account/confirm-access', { Password: user.password }).expect(302, `${TWO_FACTOR}/setup`);
      await owner.get(`${TWO_FACTOR}/setup`).expect(200);
    });

    it('takes a code from the authenticator app on the prompt instead of the password', async () => {
      const { secret } = await withTwoFactor(idp.db, user);
      const page = await owner.get(TOKENS).expect(200);
      const prompt = await owner.fill(page, `${TOKENS}/new`, { 'Token name': 'by code', [READ_ONLY]: 'checked' }).expect(403);
      await atMidStep(async () => {
        // withTwoFactor spent this step's code: the next one.
        await owner.fill(prompt, `${TOKENS}/new`, { 'Code from your app': await codeFor(secret, 1) }).expect(302, `${TOKENS}?notice=token-created`);
      }, 0);
      expect((await tokensOf(idp, user)).map((t) => t.name)).to.deep.equal(['by code']);
    });

    it('counts wrong passwords on the prompt against the sign-in limits, and the sign-in page shares them', async () => {
      const page = await owner.get(TOKENS).expect(200);
      let prompt = await owner.fill(page, `${TOKENS}/new`, { 'Token name': 'limited', [READ_ONLY]: 'checked' }).expect(403);
      for (let i = 0; i < 5; i += 1) prompt = await owner.fill(prompt, `${TOKENS}/new`, { Password: `wrong guess ${i}` }).expect(400);
      // Past the limit of the account from this address, even the right one waits, with the sign-in's words.
      const limited = await owner.fill(prompt, `${TOKENS}/new`, { Password: user.password }).expect(429);
      expect(limited.headers.get('retry-after')).to.match(/^\d+$/);
      expect(fieldError(limited.text, 'confirm_password')).to.match(/^Too many failed sign-in attempts\. Try again in/);
      const elsewhere = await visit(idp.url);
      const refused = await elsewhere.fill(await elsewhere.get('/login').expect(200), '/login', { 'Username or email': user.username, Password: user.password }).expect(429);
      expect(errorMessage(refused.text) ?? fieldError(refused.text, 'login') ?? refused.text).to.match(/Too many failed sign-in attempts/);
      expect(await tokensOf(idp, user)).to.deep.equal([]);
    });
  });

  it('a confirmation in one session does not unlock another of the same account', async () => {
    const other = await signIn(idp.url, user);
    await age(idp, owner, 11);
    await age(idp, other, 11);
    const prompt = await owner.get('/account/confirm-access?for=create-token').expect(200);
    await owner.fill(prompt, '/account/confirm-access', { Password: user.password }).expect(302, TOKENS);
    // This session is confirmed…
    const mine = await owner.get(TOKENS).expect(200);
    await owner.fill(mine, `${TOKENS}/new`, { 'Token name': 'mine', [READ_ONLY]: 'checked' }).expect(302, `${TOKENS}?notice=token-created`);
    // …the other is not.
    const theirs = await other.get(TOKENS).expect(200);
    await other.fill(theirs, `${TOKENS}/new`, { 'Token name': 'theirs', [READ_ONLY]: 'checked' }).expect(403);
    expect((await tokensOf(idp, user)).map((t) => t.name)).to.deep.equal(['mine']);
  });

  it('a confirmation lasts 10 minutes; a fresh sign-in counts as one', async () => {
    // Signed in just now: no prompt.
    const page = await owner.get(TOKENS).expect(200);
    await owner.fill(page, `${TOKENS}/new`, { 'Token name': 'fresh', [READ_ONLY]: 'checked' }).expect(302, `${TOKENS}?notice=token-created`);
    await age(idp, owner, 9);
    await owner.fill(await owner.get(TOKENS).expect(200), `${TOKENS}/new`, { 'Token name': 'nine minutes on', [READ_ONLY]: 'checked' }).expect(302);
    await age(idp, owner, 2);
    await owner.fill(await owner.get(TOKENS).expect(200), `${TOKENS}/new`, { 'Token name': 'eleven minutes on', [READ_ONLY]: 'checked' }).expect(403);
    expect((await tokensOf(idp, user)).map((t) => t.name)).to.have.members(['fresh', 'nine minutes on']);
  });

  it('the prompt page returns only to a path on this site, and straight away when the session is confirmed', async () => {
    await age(idp, owner, 11);
    const prompt = await owner.get('/account/confirm-access?for=nonsense&return_to=https://evil.example/x').expect(200);
    expect(prompt.text).to.include('Enter your password again.');
    await owner.fill(prompt, '/account/confirm-access', { Password: user.password }).expect(302, '/account/settings');
    await owner.get(`/account/confirm-access?for=add-passkey&return_to=${encodeURIComponent(PASSKEYS)}`).expect(302, PASSKEYS);
    await new Browser(idp.url).get('/account/confirm-access').expect(302, `/login?return_to=${encodeURIComponent('/account/confirm-access')}`);
  });
});
