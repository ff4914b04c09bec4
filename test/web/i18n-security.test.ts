import { expect } from 'chai';
import { recordAudit } from '../../src/db/audit.js';
import { insertPasskey } from '../../src/db/passkeys.js';
import { REPORTED_TOKEN_ACTION } from '../../src/services/access-tokens.js';
import { translator, type Language } from '../../src/i18n.js';
import { useIdp } from '../helpers/app.js';
import { Browser, signIn } from '../helpers/browser.js';
import { makeGroup, makeUser, personalToken } from '../helpers/factories.js';
import { fieldError, formOf, unescapeHtml } from '../helpers/html.js';
import { expectIn, textOf } from '../helpers/i18n-pages.js';
import { atMidStep, codeFor } from '../helpers/totp.js';

const SETTINGS = '/account/settings';
const TWO_FACTOR = `${SETTINGS}/two-factor`;

/** The flash notice of a page, as the reader reads it. */
function noticeOf(html: string): string | undefined {
  const found = /<p class="notice" role="status" data-testid="notice">([^<]*)<\/p>/.exec(html)?.[1];
  return found === undefined ? undefined : unescapeHtml(found);
}

describe('Account settings, security (two-factor authentication, recovery codes, passkeys, access tokens) in the reader\'s language', function () {
  this.timeout(60_000);
  const idp = useIdp('sqlite');

  for (const lang of ['de', 'ja'] as Language[]) {
    const t = translator(lang);
    const signedIn = async () => {
      const user = await makeUser(idp.db);
      return { user, browser: await signIn(new Browser(idp.url, { headers: { 'accept-language': lang } }), user) };
    };

    it(`sets up two-factor authentication in ${lang}: a wrong code said in ${lang}, the codes shown once, new codes, turning it off`, async () => {
      const { browser } = await signedIn();
      let recoveryCode = '';
      const off = await browser.get(TWO_FACTOR).expect(200);
      expectIn(off, lang);
      expect(textOf(off)).to.include(t('security:twoFactor.intro')).and.include(t('security:twoFactor.startSetup'));

      await atMidStep(async () => {
        await browser.fill(off, `${TWO_FACTOR}/setup`).expect(302, `${TWO_FACTOR}/setup`);
        const setup = await browser.get(`${TWO_FACTOR}/setup`).expect(200);
        expectIn(setup, lang);
        expect(setup.text).to.include(`alt="${t('security:setup.qrAlt')}"`).and.include(`data-copied="${t('security:copied')}"`);
        const code = t('security:twoFactor.code');

        const wrong = await browser.fill(setup, `${TWO_FACTOR}/setup/confirm`, { [code]: '000000x' }).expect(400);
        expectIn(wrong, lang);
        expect(fieldError(wrong.text, 'code')).to.equal(t('messages:wrongCodeNow'));

        const secret = /data-testid="totp-secret">([A-Z2-7 ]+)</.exec(setup.text)![1]!.replace(/ /g, '');
        await browser.fill(setup, `${TWO_FACTOR}/setup/confirm`, { [code]: await codeFor(secret) }).expect(302, `${TWO_FACTOR}/recovery-codes`);
        const codes = await browser.get(`${TWO_FACTOR}/recovery-codes`).expect(200);
        expectIn(codes, lang);
        expect(textOf(codes)).to.include(t('security:codes.enabledHeading')).and.include(t('security:codes.saved'));
        expect(codes.text).to.include(`<title>${t('security:codes.title')}`);
        recoveryCode = /<li><code>([a-z0-9]{5}-[a-z0-9]{5})<\/code><\/li>/.exec(codes.text)![1]!;

        // Reloaded: how many are left, and the form for new ones; a wrong code said beside it.
        const status = await browser.get(`${TWO_FACTOR}/recovery-codes`).expect(200);
        expectIn(status, lang);
        expect(textOf(status)).to.include(t('security:codes.explain'));
        const regenerate = await browser.fill(status, `${TWO_FACTOR}/recovery-codes`, { [code]: '123456' }).expect(400);
        expectIn(regenerate, lang);
        expect(fieldError(regenerate.text, 'regenerate_code')).to.equal(t('messages:wrongCode'));

        const on = await browser.get(TWO_FACTOR).expect(200);
        expectIn(on, lang);
        expect(textOf(on)).to.include(t('security:twoFactor.recoveryIntro'));
        const refused = await browser.fill(on, `${TWO_FACTOR}/disable`, { [code]: '654321' }).expect(400);
        expectIn(refused, lang);
        expect(fieldError(refused.text, 'disable_code')).to.equal(t('messages:wrongCode'));
      });

      // A recovery code turns it off, and the page says so.
      const on = await browser.get(TWO_FACTOR).expect(200);
      const turnedOff = await browser.follow(await browser.fill(on, `${TWO_FACTOR}/disable`, { [t('security:twoFactor.code')]: recoveryCode }).expect(302, `${TWO_FACTOR}?notice=disabled`)).expect(200);
      expectIn(turnedOff, lang);
      expect(noticeOf(turnedOff.text)).to.equal(t('security:twoFactor.disabled'));
    });

    it(`says in ${lang} that two-factor authentication is off, and which group asks for it`, async () => {
      const { user, browser } = await signedIn();
      const group = await makeGroup(idp.db, user.id);
      await idp.db('groups').where({ id: group.id }).update({ require_two_factor: true });
      const page = await browser.get(`${TWO_FACTOR}?return_to=${encodeURIComponent(`/groups/${group.path}`)}`).expect(200);
      expectIn(page, lang);
      expect(textOf(page)).to.include(t('security:twoFactor.reason', { group: group.name }));
      const disabled = await browser.get(`${TWO_FACTOR}?notice=disabled`).expect(200);
      expectIn(disabled, lang);
      expect(noticeOf(disabled.text)).to.equal(t('security:twoFactor.disabled'));
    });

    it(`lists passkeys in ${lang}: none, some, a wrong password and an expired request said in ${lang}, a removal`, async () => {
      const { user, browser } = await signedIn();
      const none = await browser.get(`${SETTINGS}/passkeys`).expect(200);
      expectIn(none, lang);
      expect(textOf(none)).to.include(t('security:passkeys.none'));
      expect(none.text).to.include(`data-no-name="${t('security:passkeys.script.noName')}"`);

      // The form posted without the browser's answer: the request it needs has expired.
      const expired = await browser.fill(none, `${SETTINGS}/passkeys`, { [t('security:passkeys.nameLabel')]: 'Laptop' }).expect(400);
      expectIn(expired, lang);
      expect(fieldError(expired.text, 'name')).to.equal(t('messages:passkeyExpired'));

      const at = new Date().toISOString();
      await insertPasskey(idp.db, { userId: user.id, credentialId: `cred-${user.id}-a`, publicKey: 'cHVibGlj', counter: 0, transports: '', name: 'Laptop', at });
      await insertPasskey(idp.db, { userId: user.id, credentialId: `cred-${user.id}-b`, publicKey: 'cHVibGlj', counter: 0, transports: '', name: 'YubiKey', at });
      const some = await browser.get(`${SETTINGS}/passkeys`).expect(200);
      expectIn(some, lang);
      expect(textOf(some)).to.include(t('security:passkeys.lastUsed')).and.include(t('security:passkeys.never'));

      const wrong = await browser.fill(some, '/remove', { [t('security:passkeys.yourPassword')]: 'not the password' }).expect(400);
      expectIn(wrong, lang);
      const field = /name="(password_\d+)"/.exec(wrong.text)![1]!;
      expect(fieldError(wrong.text, field)).to.equal(t('messages-security:currentPasswordWrong'));

      const removed = await browser.follow(await browser.fill(some, '/remove', { [t('security:passkeys.yourPassword')]: user.password }).expect(302)).expect(200);
      expectIn(removed, lang);
      expect(noticeOf(removed.text)).to.equal(t('security:passkeys.removedNotice'));
    });

    it(`makes an access token in ${lang}: the form's errors, the new token once, the list, a group's cap and a reported token said in ${lang}`, async () => {
      const { user, browser } = await signedIn();
      const empty = await browser.get(`${SETTINGS}/tokens`).expect(200);
      expectIn(empty, lang);
      expect(textOf(empty)).to.include(t('security:tokens.none')).and.include(t('security:tokens.scope.groups-read-only'));
      expect(empty.text).to.include(`data-note-all="${t('security:tokens.noteAll')}"`);

      const bad = await browser.fill(empty, `${SETTINGS}/tokens/new`, { [t('security:tokens.name')]: '' }).expect(400);
      expectIn(bad, lang);
      expect(fieldError(bad.text, 'name')).to.equal(t('messages-security:tokenNameRequired'));
      expect(fieldError(bad.text, 'scopes')).to.equal(t('messages-security:scopesAtLeastOne'));

      // A group whose cap is shorter than the expiration chosen: its cap said in the page's words.
      const group = await makeGroup(idp.db, user.id, { name: 'Weekly' });
      await idp.db('groups').where({ id: group.id }).update({ personal_token_max_lifetime_days: 7 });
      const form = await browser.get(`${SETTINGS}/tokens`).expect(200);
      const fields = formOf(form.text, '/tokens/new').fields;
      const capped = await browser.postForm(`${SETTINGS}/tokens/new`, { ...fields, name: 'deploy', scopes: 'groups:read-only', expiration: '30', groupAccess: 'selected', groups: String(group.id) }).expect(400);
      expectIn(capped, lang);
      expect(unescapeHtml(fieldError(capped.text, 'expiration')!)).to.equal(t('security:tokens.capsRefused', { caps: t('security:tokens.capOther', { group: 'Weekly', days: 7 }) }));

      const made = await browser.postForm(`${SETTINGS}/tokens/new`, { ...fields, name: 'deploy', scopes: 'groups:read-only', expiration: '7' }).expect(302);
      const shown = await browser.follow(made).expect(200);
      expectIn(shown, lang);
      expect(noticeOf(shown.text)).to.equal(t('security:tokens.generated'));
      expect(shown.text).to.include('data-testid="new-token">ha_');

      const reloaded = await browser.get(`${SETTINGS}/tokens?notice=token-created`).expect(200);
      expectIn(reloaded, lang);
      expect(noticeOf(reloaded.text)).to.equal(t('security:tokens.createdNotice'));
      expect(textOf(reloaded)).to.include(t('security:tokens.allMyGroups'));

      await personalToken(idp.db, user.id, { name: 'ci', groups: [Number(group.id)], expiresInDays: 7 });
      await recordAudit(idp.db, { groupId: null, userId: user.id, actorId: null, action: REPORTED_TOKEN_ACTION, target: 'leaked', details: {}, ip: null }, new Date().toISOString());
      const listed = await browser.get(`${SETTINGS}/tokens?notice=token-revoked`).expect(200);
      expectIn(listed, lang);
      expect(noticeOf(listed.text)).to.equal(t('security:tokens.revokedNotice'));
      expect(textOf(listed)).to.include(t('security:tokens.onlyThese', { groups: 'Weekly' }));
      expect(listed.text).to.include('data-testid="reported-token"');
      expect(listed.text).to.include(`data-confirm="${t('security:tokens.revokeConfirm', { name: 'ci' })}"`);
    });
  }
});
