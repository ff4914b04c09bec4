import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { insertIdentity } from '../../src/db/identities.js';
import { insertSignInProvider, type SignInProviderRow } from '../../src/db/sign-in-providers.js';
import { translator } from '../../src/i18n.js';
import { now } from '../../src/time.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { Browser, signIn } from '../helpers/browser.js';
import { makeUser, type TestUser } from '../helpers/factories.js';
import { errorMessage, parseForms, unescapeHtml } from '../helpers/html.js';
import { expectIn } from '../helpers/i18n-pages.js';

/**
 * Account settings → Sign-in methods with an identity of a directory (LDAP): the directory keeps
 * the account, so the page offers no Unlink for it and says why, and a hand-made unlink is
 * refused (409) with the reason on the page. The identities are written straight to the
 * database, as a directory's first sign-in writes them; nothing here asks a directory.
 */
const METHODS = '/account/settings/sign-in-methods';
const unique = () => randomBytes(3).toString('hex');

describeEachProfile('Account settings → Sign-in methods: a directory\'s identity', (profile) => {
  const idp = useIdp(profile);

  async function provider(kind: 'ldap' | 'oidc', name: string): Promise<SignInProviderRow> {
    const row = await insertSignInProvider(idp.db, {
      slug: `${kind}-${unique()}`,
      kind,
      name,
      client_id: kind === 'ldap' ? 'cn=idp-service,dc=example,dc=org' : 'horizon',
      client_secret: 'a secret',
      scopes: kind === 'ldap' ? '' : 'openid email',
      settings: JSON.stringify(kind === 'ldap'
        ? { url: 'ldaps://ldap.example.org', user_base: 'ou=people,dc=example,dc=org', user_filter: '(uid={{username}})' }
        : { issuer: 'https://sso.example.org' }),
      allow_sign_up: true,
      allowed_domains: '',
      trust_mfa: false,
      position: 0,
    }, now());
    if (!row) throw new Error('provider not inserted');
    return row;
  }

  async function linked(user: TestUser, row: SignInProviderRow, username: string): Promise<number> {
    expect(await insertIdentity(idp.db, { userId: user.id, providerId: row.id, subject: `sub-${unique()}`, username, email: user.email, at: now() })).to.equal(true);
    return Number((await idp.db('user_identities').where({ user_id: user.id, provider_id: row.id }).first()).id);
  }

  it('offers no Unlink for a directory\'s identity, saying the directory keeps the account; another provider\'s keeps its Unlink', async () => {
    const user = await makeUser(idp.db);
    const corp = await provider('ldap', 'Corp Directory');
    const sso = await provider('oidc', 'Some SSO');
    const directoryIdentity = await linked(user, corp, 'alice');
    const ssoIdentity = await linked(user, sso, 'alice-sso');
    const other = await provider('ldap', 'Other Directory');
    const browser = await signIn(idp.url, user);
    const page = await browser.get(METHODS).expect(200);
    expect(parseForms(page.text, '/unlink').map((form) => form.action)).to.deep.equal([`${METHODS}/identities/${ssoIdentity}/unlink`]);
    expect(page.text).not.to.include(`identities/${directoryIdentity}/unlink`);
    const kept = /data-testid="directory-kept">([^<]*)</.exec(page.text)?.[1];
    expect(unescapeHtml(kept ?? '')).to.equal('Kept by Corp Directory: you sign in with its username and password, and it cannot be unlinked here.');
    // A directory links itself at a first sign-in: it is never offered to link.
    expect(parseForms(page.text, `${METHODS}/link/`).map((form) => form.action)).not.to.include(`${METHODS}/link/${other.slug}`);
  });

  it('refuses a hand-made unlink of a directory\'s identity (409) with the reason on the page, and keeps the identity', async () => {
    const user = await makeUser(idp.db);
    const corp = await provider('ldap', 'Corp Directory');
    const id = await linked(user, corp, 'bob');
    const browser = await signIn(idp.url, user);
    await browser.get(METHODS).expect(200);
    // With the page's own CSRF token, to an address no form of the page posts to.
    const refused = await browser.submit(`${METHODS}/identities/${id}/unlink`).expect(409);
    expect(errorMessage(refused.text)).to.equal('Your account is kept by Corp Directory: it cannot be unlinked here. Ask a site administrator if it should no longer be.');
    expect(await idp.db('user_identities').where({ id }).first()).to.not.equal(undefined);
    expect(await idp.db('audit_events').where({ user_id: user.id, action: 'user.identity.unlink' }).first()).to.equal(undefined);
  });

  it('says both in German and Japanese', async () => {
    const user = await makeUser(idp.db);
    const corp = await provider('ldap', 'Corp Directory');
    const id = await linked(user, corp, 'carol');
    for (const lang of ['de', 'ja'] as const) {
      const t = translator(lang);
      const browser = await signIn(new Browser(idp.url, { headers: { 'accept-language': lang } }), user);
      const page = await browser.get(METHODS).expect(200);
      expectIn(page, lang);
      expect(unescapeHtml(/data-testid="directory-kept">([^<]*)</.exec(page.text)?.[1] ?? '')).to.equal(t('account:signInMethods.directoryKept', { provider: 'Corp Directory' }));
      const refused = await browser.submit(`${METHODS}/identities/${id}/unlink`).expect(409);
      expectIn(refused, lang);
      expect(errorMessage(refused.text)).to.equal(t('messages-account:directoryIdentity', { provider: 'Corp Directory' }));
    }
  });
});
