import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { insertIdentity } from '../../src/db/identities.js';
import { findSignInProvider, insertSignInProvider, type SignInProviderRow } from '../../src/db/sign-in-providers.js';
import { translator } from '../../src/i18n.js';
import { keyCipher } from '../../src/key-encryption.js';
import { setSiteAdmin } from '../../src/services/admin.js';
import { createProvider, type ProviderInput } from '../../src/services/federation/manage.js';
import { openClientSecret } from '../../src/services/federation/providers.js';
import { now } from '../../src/time.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { Browser, signIn, type Page } from '../helpers/browser.js';
import { makeGroup, makeUser, type TestUser } from '../helpers/factories.js';
import { errorMessage, fieldError, fillForm, formOf, parseForm, unescapeHtml } from '../helpers/html.js';
import { expectIn } from '../helpers/i18n-pages.js';
import { directorySettings, ldapGroups, ldapPeople, startSlapd, type Slapd } from '../helpers/slapd.js';

/**
 * Admin → Sign-in providers for a directory (LDAP / Active Directory), against a real OpenLDAP
 * (Debian's slapd, started here with a test CA): the Add form as an administrator fills it (by
 * its labels), the provider's page with Test connection, Test a user and Check linked accounts
 * now, each through the page's own form, on both storage profiles.
 */
const KEYS_SECRET = 'a-keys-secret-of-at-least-32-characters!';
const CLI = { userId: 0, ip: null, admin: true } as const;
const KIND_LABEL = 'LDAP / Active Directory';
const unique = () => randomBytes(3).toString('hex');

/** The text of the (first) element with that test id as a reader sees it: inline markup dropped, blocks apart. */
function testid(html: string, id: string): string | undefined {
  const found = new RegExp(`<(\\w+)\\b[^>]*data-testid="${id}"[^>]*>([\\s\\S]*?)</\\1>`).exec(html)?.[2];
  if (found === undefined) return undefined;
  return unescapeHtml(found.replace(/<\/?(?:code|span|strong|em|a)\b[^>]*>/g, '').replace(/<[^>]+>/g, ' ')).replace(/\s+/g, ' ').trim();
}

/** The `<code>` items of a list with that test id (a person's directory groups). */
function codesIn(html: string, id: string): string[] {
  const block = new RegExp(`data-testid="${id}"[^>]*>([\\s\\S]*?)</dd>`).exec(html)?.[1] ?? '';
  return [...block.matchAll(/<code>([^<]*)<\/code>/g)].map((m) => unescapeHtml(m[1]!));
}

describeEachProfile('Admin → Sign-in providers: a directory (LDAP)', (profile) => {
  const idp = useIdp(profile, { KEYS_SECRET });
  const manage = () => ({ db: idp.db, cipher: keyCipher(KEYS_SECRET) });
  let slapd: Slapd;
  let admin: TestUser;
  let site: Browser;
  let platform: { id: number; path: string };

  before(async function () {
    this.timeout(30_000);
    slapd = await startSlapd();
    admin = await makeUser(idp.db, { username: `root-${unique()}` });
    await setSiteAdmin(idp.db, CLI, admin, true);
    site = await signIn(idp.url, admin);
    platform = await makeGroup(idp.db, admin.id, { path: `platform-${unique()}` });
  });

  after(async () => {
    await slapd?.close();
  });

  /** A directory provider as the tests' slapd wants it, `overrides` changed. */
  const settingsOf = (overrides: Record<string, string> = {}) =>
    directorySettings(slapd, `${ldapGroups.developers.dn} = ${platform.path} member\n${ldapGroups.admins.dn} = ${platform.path} maintainer`, overrides);

  async function directory(overrides: Record<string, string> = {}, input: Partial<ProviderInput> = {}): Promise<SignInProviderRow> {
    const slug = `dir-${unique()}`;
    return createProvider(manage(), CLI, {
      kind: 'ldap',
      slug,
      name: `Directory ${slug}`,
      client_id: slapd.serviceDn,
      client_secret: slapd.servicePassword,
      settings: settingsOf(overrides),
      ...input,
    });
  }

  /** Opens Add, picks the directory kind on the first page, and returns its form. */
  async function addForm(browser = site): Promise<Page> {
    const picker = await browser.get('/admin/providers/new').expect(200);
    const { action, fields } = fillForm(picker.text, '/admin/providers/new', { [KIND_LABEL]: 'checked' });
    return browser.get(`${action}?${fields.toString()}`).expect(200);
  }

  /** Posts the provider page's form for `what` (test-connection, test-user, check) as the page wrote it, `typed` by label. */
  async function press(slug: string, what: string, typed: Record<string, string> = {}, status = 200): Promise<Page> {
    const page = await site.get(`/admin/providers/${slug}`).expect(200);
    return site.fill(page, `/admin/providers/${slug}/${what}`, typed).expect(status);
  }

  it('offers LDAP / Active Directory among the kinds; its form has text areas, the defaults, the service account\'s fields, and no scopes, trust or callback URL', async () => {
    const form = await addForm();
    const controls = parseForm(form.text, '/admin/providers').controls;
    const control = (name: string) => controls.find((c) => c.name === name);
    expect(control('ca_certificate')?.type).to.equal('textarea');
    expect(control('group_mapping')?.type).to.equal('textarea');
    expect(control('url')?.type).to.equal('text');
    expect(Object.fromEntries(['user_filter', 'username_attribute', 'email_attribute', 'name_attribute', 'id_attribute', 'group_filter'].map((n) => [n, control(n)?.value]))).to.deep.equal({
      user_filter: '(uid={{username}})',
      username_attribute: 'uid',
      email_attribute: 'mail',
      name_attribute: 'cn',
      id_attribute: 'entryUUID',
      group_filter: '(member={{dn}})',
    });
    expect(control('client_id')?.label).to.equal('Service account DN');
    expect(control('client_secret')).to.include({ label: 'Service account password', type: 'password' });
    expect(control('allow_sign_up')?.checked, 'new accounts allowed at first').to.equal(true);
    expect(control('scopes')).to.equal(undefined);
    expect(control('trust_mfa')).to.equal(undefined);
    expect(form.text).not.to.include('/login/callback');
    expect(form.text).to.include('first sign-in with their directory username and password');
    expect(form.text).to.include(`<h1>Add ${KIND_LABEL}</h1>`);
  });

  it('adds a directory through its form: settings as typed, the password sealed and shown nowhere, and a page without a callback URL', async () => {
    const slug = `corp-${unique()}`;
    const mapping = `${ldapGroups.developers.dn} = ${platform.path} member\r\n\r\n${ldapGroups.admins.dn} = ${platform.path} maintainer`;
    const added = await site.fill(await addForm(), '/admin/providers', {
      'Display name': 'Corp Directory',
      Slug: slug,
      'Directory URL': slapd.ldapsUrl,
      'CA certificate': slapd.caPem.replace(/\n/g, '\r\n'),
      'User search base': `ou=people,${slapd.baseDn}`,
      'Group search base': `ou=groups,${slapd.baseDn}`,
      'Group mapping': mapping,
      'Service account DN': slapd.serviceDn,
      'Service account password': slapd.servicePassword,
    }).expect(302, `/admin/providers/${slug}?notice=added`);
    const page = await site.get(added.headers.get('location')!).expect(200);
    expect(testid(page.text, 'notice')).to.equal('Directory added. Test its connection and a user below.');
    expect(testid(page.text, 'client-id')).to.equal(slapd.serviceDn);
    expect(page.text).not.to.include('callback-url').and.not.to.include('/login/callback');
    expect(page.text).not.to.include('Trust its two-factor').and.not.to.include('<dt>Scopes</dt>');
    expect(page.text).to.include('<dt>Service account DN</dt>').and.to.include('<dt>Service account password</dt>');
    expect(page.text).to.match(/data-testid="setting-ca_certificate"><pre class="setting-value">-----BEGIN CERTIFICATE-----/);

    const row = (await findSignInProvider(idp.db, slug))!;
    expect(row).to.include({ kind: 'ldap', client_id: slapd.serviceDn, scopes: '' });
    expect(Boolean(row.allow_sign_up)).to.equal(true);
    expect(Boolean(row.trust_mfa)).to.equal(false);
    const settings = JSON.parse(row.settings) as Record<string, string>;
    expect(settings).to.include({ url: slapd.ldapsUrl, user_filter: '(uid={{username}})', id_attribute: 'entryUUID', group_filter: '(member={{dn}})' });
    expect(settings.ca_certificate).to.equal(slapd.caPem.trim());
    expect(settings.group_mapping).to.equal(`${ldapGroups.developers.dn} = ${platform.path} member\n${ldapGroups.admins.dn} = ${platform.path} maintainer`);
    expect(row.client_secret).to.match(/^enc:v1:/);
    expect(openClientSecret(keyCipher(KEYS_SECRET), row.client_secret)).to.equal(slapd.servicePassword);
    for (const path of [`/admin/providers/${slug}`, `/admin/providers/${slug}/edit`, '/admin/providers', '/admin/audit']) {
      expect((await site.get(path).expect(200)).text, path).not.to.include(slapd.servicePassword);
    }
    // Edit shows the text areas with what was saved, and the password field empty.
    const edit = await site.get(`/admin/providers/${slug}/edit`).expect(200);
    const controls = parseForm(edit.text, `/admin/providers/${slug}/edit`).controls;
    expect(controls.find((c) => c.name === 'group_mapping')?.value).to.equal(settings.group_mapping);
    expect(controls.find((c) => c.name === 'client_secret')?.label).to.equal('Service account password');
    await site.fill(edit, `/admin/providers/${slug}/edit`).expect(302, `/admin/providers/${slug}?notice=unchanged`);
  });

  it('names each bad field in its own words: a URL that is not LDAP, a filter without {{username}}, a mapping line without a group, the service account', async () => {
    const refused = await site.fill(await addForm(), '/admin/providers', {
      'Display name': 'Bad Directory',
      Slug: `bad-${unique()}`,
      'Directory URL': 'http://x',
      'CA certificate': 'not a certificate',
      'User search base': 'people',
      'User filter': '(uid=alice)',
      'Group mapping': ldapGroups.developers.dn,
      'Service account DN': '',
      'Service account password': 'typed-password-xyz',
    }).expect(400);
    expect(fieldError(refused.text, 'url')).to.equal('The URL must start with ldaps:// or ldap:// (StartTLS is then always used)');
    expect(fieldError(refused.text, 'ca_certificate')).to.equal('The CA certificate must be PEM: -----BEGIN CERTIFICATE----- …');
    expect(fieldError(refused.text, 'user_base')).to.equal('The user search base must be a DN such as ou=people,dc=example,dc=org');
    expect(fieldError(refused.text, 'user_filter')).to.equal('The user filter must contain {{username}} where the typed username goes, such as (uid={{username}})');
    expect(fieldError(refused.text, 'group_mapping')).to.match(/^Group mapping line 1 must be "<directory group DN> = <group> \[owner\|maintainer\|member\]"/);
    expect(fieldError(refused.text, 'client_id')).to.equal('Service account DN is required');
    // What was typed is there to correct, in its text area too; the password is not.
    const controls = parseForm(refused.text, '/admin/providers').controls;
    expect(controls.find((c) => c.name === 'group_mapping')?.value).to.equal(ldapGroups.developers.dn);
    expect(controls.find((c) => c.name === 'url')?.value).to.equal('http://x');
    expect(refused.text).not.to.include('typed-password-xyz');

    const more = await site.fill(refused, '/admin/providers', {
      'Directory URL': '',
      'Group mapping': `${ldapGroups.developers.dn} = ${platform.path} chief`,
      'Group filter': 'member={{dn}}',
      'Service account DN': 'not a dn',
      'Service account password': '',
    }).expect(400);
    expect(fieldError(more.text, 'url')).to.equal('Directory URL is required');
    expect(fieldError(more.text, 'group_mapping')).to.equal('The role on group mapping line 1 must be owner, maintainer or member');
    expect(fieldError(more.text, 'group_filter')).to.equal('The group filter must be in parentheses, such as (member={{dn}})');
    expect(fieldError(more.text, 'client_id')).to.equal('Service account DN must be a DN such as ou=people,dc=example,dc=org');
    expect(fieldError(more.text, 'client_secret')).to.equal('Service account password is required');
  });

  it('says the form\'s errors in German, each beside its field, with the service account\'s German labels', async () => {
    const german = await signIn(new Browser(idp.url, { headers: { 'accept-language': 'de' } }), admin);
    const t = translator('de');
    const form = await addForm(german);
    expectIn(form, 'de');
    expect(parseForm(form.text, '/admin/providers').controls.find((c) => c.name === 'client_id')?.label).to.equal(t('admin:directoryLabels.client_id'));
    const refused = await german.fill(form, '/admin/providers', {
      [t('admin:labels.name')]: 'Verzeichnis',
      [t('admin:labels.slug')]: `de-${unique()}`,
      [t('admin:kinds.ldap.url.label')]: 'ldaps://ldap.example.com/ou=people',
      [t('admin:kinds.ldap.user_base.label')]: `ou=people,${slapd.baseDn}`,
      [t('admin:kinds.ldap.user_filter.label')]: '((uid={{username}})',
      [t('admin:kinds.ldap.group_mapping.label')]: `=> ${platform.path}`,
      [t('admin:directoryLabels.client_id')]: slapd.serviceDn,
    }).expect(400);
    expectIn(refused, 'de');
    expect(fieldError(refused.text, 'url')).to.equal(t('messages-admin:ldapUrlPath'));
    expect(fieldError(refused.text, 'user_filter')).to.equal(t('messages-admin:userFilterUnbalanced', { username: '{{username}}' }));
    expect(fieldError(refused.text, 'group_mapping')).to.equal(t('messages-admin:mappingGroupRequired', { line: 1 }));
    expect(fieldError(refused.text, 'client_secret')).to.equal(t('messages-admin:bindPasswordRequired'));
    // The form in Japanese too, its hints and labels all translated.
    const japanese = await signIn(new Browser(idp.url, { headers: { 'accept-language': 'ja' } }), admin);
    const ja = await addForm(japanese);
    expectIn(ja, 'ja');
    expect(parseForm(ja.text, '/admin/providers').controls.find((c) => c.name === 'client_secret')?.label).to.equal(translator('ja')('admin:directoryLabels.client_secret'));
  });

  it('tests the connection: connected and the user search base found; a wrong search base or service password says so', async () => {
    const row = await directory();
    const page = await press(row.slug, 'test-connection');
    expect(testid(page.text, 'connection-ok')).to.equal('Connected: the directory accepted TLS and the service account\'s DN and password.');
    expect(testid(page.text, 'user-base')).to.equal(`The user search base ou=people,${slapd.baseDn} was found.`);
    expect(page.text).not.to.include(slapd.servicePassword);

    const nowhere = await directory({ user_base: `ou=nobody,${slapd.baseDn}` });
    expect(testid((await press(nowhere.slug, 'test-connection')).text, 'user-base')).to.match(/^The user search base ou=nobody,dc=example,dc=org was not found/);

    const wrong = await directory({}, { client_secret: 'not-the-service-password' });
    const refused = await press(wrong.slug, 'test-connection');
    expect(testid(refused.text, 'failure')).to.equal(`${wrong.name} refused the service account's DN and password.`);
    expect(refused.text).not.to.include('not-the-service-password');

    // A directory whose certificate the provider's CA did not sign: not trusted, and said so.
    const untrusted = await directory({ ca_certificate: '' });
    expect(testid((await press(untrusted.slug, 'test-connection')).text, 'failure')).to.match(new RegExp(`^${untrusted.name}'s certificate is not trusted \\(`));
  });

  it('tests a user: the person\'s DN, e-mail, groups and what the mapping gives; someone unknown, or *, is not found, with the filter sent', async () => {
    const row = await directory();
    const alice = await press(row.slug, 'test-user', { Username: 'alice' });
    expect(testid(alice.text, 'user-found')).to.equal('Found “alice”: a sign-in would read this.');
    expect(testid(alice.text, 'user-dn')).to.equal(ldapPeople.alice.dn);
    expect(testid(alice.text, 'user-subject')).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(testid(alice.text, 'user-username')).to.equal('alice');
    expect(testid(alice.text, 'user-email')).to.equal(ldapPeople.alice.mail);
    expect(testid(alice.text, 'user-name')).to.equal(ldapPeople.alice.cn);
    expect(testid(alice.text, 'user-disabled')).to.equal('No');
    expect(codesIn(alice.text, 'user-groups').sort()).to.deep.equal([ldapGroups.admins.dn, ldapGroups.developers.dn].sort());
    expect(testid(alice.text, 'mapped-group')).to.equal(`${platform.path}: Maintainer`);
    expect(testid(alice.text, 'user-filter')).to.equal('(uid=alice)');
    expect(alice.text).not.to.include(slapd.servicePassword);

    const bob = await press(row.slug, 'test-user', { Username: ' bob ' });
    expect(testid(bob.text, 'mapped-group'), 'developers alone give member').to.equal(`${platform.path}: Member`);

    const nobody = await press(row.slug, 'test-user', { Username: 'nobody-here' });
    expect(testid(nobody.text, 'user-not-found')).to.match(/^Nobody was found for “nobody-here”\./);
    expect(testid(nobody.text, 'user-filter')).to.equal('(uid=nobody-here)');

    // The typed username is escaped as a sign-in escapes it: * matches nobody, and star*man only its owner.
    const star = await press(row.slug, 'test-user', { Username: '*' });
    expect(testid(star.text, 'user-not-found')).to.match(/^Nobody was found for “\*”\./);
    expect(testid(star.text, 'user-filter')).to.equal('(uid=\\2a)');
    const starman = await press(row.slug, 'test-user', { Username: 'star*man' });
    expect(testid(starman.text, 'user-dn')).to.equal(ldapPeople.starman.dn);
    expect(testid(starman.text, 'user-filter')).to.equal('(uid=star\\2aman)');
    expect(testid(starman.text, 'user-groups')).to.equal('None');
    expect(testid(starman.text, 'mapped-group')).to.equal(`${platform.path}: not a member`);

    // A locked entry, and one without an address: what a sign-in would make of them.
    const carol = await press(row.slug, 'test-user', { Username: 'carol' });
    expect(testid(carol.text, 'user-disabled')).to.equal('Yes: a sign-in would be refused pwdAccountLockedTime');
    const dave = await press(row.slug, 'test-user', { Username: 'dave' });
    expect(testid(dave.text, 'user-email')).to.equal('None: no account can be made at a first sign-in.');
  });

  it('refuses Test a user without a username, or with a control character, as a form error (400), never a 500', async () => {
    const row = await directory();
    const empty = await press(row.slug, 'test-user', { Username: '  ' }, 400);
    expect(fieldError(empty.text, 'username')).to.equal('Username is required');
    // A control character is refused where the form enters, naming the field.
    const control = await press(row.slug, 'test-user', { Username: 'al\u0000ice' }, 400);
    expect(errorMessage(control.text)).to.equal('Username must not contain control characters');
    const long = await press(row.slug, 'test-user', { Username: 'a'.repeat(255) }, 400);
    expect(fieldError(long.text, 'username')).to.equal('Username must be at most 254 characters');
    // A hand-made post without the field at all, with the page's CSRF token.
    const page = await site.get(`/admin/providers/${row.slug}`).expect(200);
    const { fields } = formOf(page.text, `/admin/providers/${row.slug}/test-user`);
    const bare = await site.postForm(`/admin/providers/${row.slug}/test-user`, { _csrf: fields._csrf! }).expect(400);
    expect(fieldError(bare.text, 'username')).to.equal('Username is required');
  });

  it('shows what went wrong on the page (200, never a 5xx) while the directory is down, and changes nothing at the check', async function () {
    this.timeout(40_000);
    const row = await directory();
    await slapd.stop();
    try {
      const connection = await press(row.slug, 'test-connection');
      expect(testid(connection.text, 'failure')).to.equal(`${row.name} could not be reached.`);
      const user = await press(row.slug, 'test-user', { Username: 'alice' });
      expect(testid(user.text, 'failure')).to.equal(`${row.name} could not be reached.`);
      const person = await makeUser(idp.db);
      expect(await insertIdentity(idp.db, { userId: person.id, providerId: row.id, subject: randomBytes(8).toString('hex'), username: person.username, email: person.email, at: now() })).to.equal(true);
      const check = await press(row.slug, 'check');
      expect(testid(check.text, 'check-skipped')).to.equal('Nothing was changed: the directory could not be asked.');
      expect(testid(check.text, 'check-checked')).to.equal('1');
      expect(testid(check.text, 'check-disabled')).to.equal('0');
      expect((await idp.db('users').where({ id: person.id }).first()).disabled_at).to.equal(null);
    } finally {
      await slapd.start();
    }
    expect(testid((await press(row.slug, 'test-connection')).text, 'connection-ok')).to.match(/^Connected/);
  });

  it('checks the linked accounts now: a person the directory still has stays, one it no longer has is disabled', async () => {
    const row = await directory();
    // Alice's unique ID, as the page's Test a user shows it.
    const subject = testid((await press(row.slug, 'test-user', { Username: 'alice' })).text, 'user-subject')!;
    const stays = await makeUser(idp.db);
    const gone = await makeUser(idp.db);
    await insertIdentity(idp.db, { userId: stays.id, providerId: row.id, subject, username: 'alice', email: stays.email, at: now() });
    await insertIdentity(idp.db, { userId: gone.id, providerId: row.id, subject: '00000000-0000-4000-8000-000000000000', username: 'left', email: gone.email, at: now() });
    const page = await press(row.slug, 'check');
    expect(testid(page.text, 'check-result')).to.match(/^Checked\./);
    expect([testid(page.text, 'check-checked'), testid(page.text, 'check-disabled'), testid(page.text, 'check-enabled')]).to.deep.equal(['2', '1', '0']);
    expect((await idp.db('users').where({ id: gone.id }).first()).disabled_at).not.to.equal(null);
    expect((await idp.db('users').where({ id: stays.id }).first()).disabled_at).to.equal(null);
    // Again: nothing more to do.
    const again = await press(row.slug, 'check');
    expect([testid(again.text, 'check-checked'), testid(again.text, 'check-disabled'), testid(again.text, 'check-enabled')]).to.deep.equal(['2', '0', '0']);

    // A search base where nobody is: none of its two people found, and nothing changed.
    const wrong = await directory({ user_base: `ou=groups,${slapd.baseDn}` });
    const first = await makeUser(idp.db);
    const second = await makeUser(idp.db);
    await insertIdentity(idp.db, { userId: first.id, providerId: wrong.id, subject, username: 'alice', email: first.email, at: now() });
    await insertIdentity(idp.db, { userId: second.id, providerId: wrong.id, subject: '00000000-0000-4000-8000-000000000001', username: 'x', email: second.email, at: now() });
    const skipped = await press(wrong.slug, 'check');
    expect(testid(skipped.text, 'check-skipped')).to.match(/^Nothing was changed: the directory found none of the linked people/);
    expect((await idp.db('users').where({ id: first.id }).first()).disabled_at).to.equal(null);
  });

  it('tests and checks only directories: the same addresses of another kind\'s provider are 404, and every post needs its CSRF token', async () => {
    const oidc = await insertSignInProvider(idp.db, {
      slug: `oidc-${unique()}`, kind: 'oidc', name: 'Some SSO', client_id: 'x', client_secret: 'y', scopes: 'openid', settings: JSON.stringify({ issuer: 'https://sso.example.com' }),
      allow_sign_up: false, allowed_domains: '', trust_mfa: false, position: 0,
    }, now());
    const page = await site.get(`/admin/providers/${oidc!.slug}`).expect(200);
    expect(page.text).to.include('data-testid="callback-url"');
    expect(page.text).not.to.include('test-connection');
    for (const what of ['test-connection', 'test-user', 'check']) {
      await site.submit(`/admin/providers/${oidc!.slug}/${what}`, { username: 'alice' }).expect(404);
    }
    const row = await directory();
    for (const what of ['test-connection', 'test-user', 'check']) {
      const res = await site.postForm(`/admin/providers/${row.slug}/${what}`, { username: 'alice' });
      expect(res.status, what).to.equal(403);
    }
    // To anyone but a site administrator, they are addresses that do not exist.
    const someone = await signIn(idp.url, await makeUser(idp.db));
    for (const what of ['test-connection', 'test-user', 'check']) {
      await someone.submit(`/admin/providers/${row.slug}/${what}`, { username: 'alice' }).expect(404);
    }
  });

  it('shows the directory\'s answers in German and Japanese', async () => {
    const row = await directory();
    for (const lang of ['de', 'ja'] as const) {
      const t = translator(lang);
      const browser = await signIn(new Browser(idp.url, { headers: { 'accept-language': lang } }), admin);
      const page = await browser.get(`/admin/providers/${row.slug}`).expect(200);
      expectIn(page, lang);
      expect(page.text).to.include(`<dt>${t('admin:directoryLabels.client_id')}</dt>`);
      const connected = await browser.fill(page, 'test-connection').expect(200);
      expectIn(connected, lang);
      expect(testid(connected.text, 'connection-ok')).to.equal(t('admin:directory.connected'));
      const user = await browser.fill(connected, 'test-user', { [t('admin:directory.username')]: 'alice' }).expect(200);
      expectIn(user, lang);
      expect(testid(user.text, 'mapped-group')).to.equal(`${platform.path}: ${t('groups:roles.maintainer.label')}`);
      const nobody = await browser.fill(user, 'test-user', { [t('admin:directory.username')]: 'nobody-here' }).expect(200);
      expectIn(nobody, lang);
      const check = await browser.fill(nobody, '/check').expect(200);
      expectIn(check, lang);
      expect(testid(check.text, 'check-result')).to.equal(`${t('admin:directory.checked')} ${t('admin:directory.checkedCount')} 0 ${t('admin:directory.disabledCount')} 0 ${t('admin:directory.enabledCount')} 0`);
      expect(testid(check.text, 'check-checked')).to.equal('0');
    }
    const down = await directory({ url: 'ldaps://127.0.0.1:9' });
    const german = await signIn(new Browser(idp.url, { headers: { 'accept-language': 'de' } }), admin);
    const failed = await german.fill(await german.get(`/admin/providers/${down.slug}`).expect(200), 'test-connection').expect(200);
    expectIn(failed, 'de');
    expect(testid(failed.text, 'failure')).to.equal(translator('de')('messages-admin:directoryUnreachable', { name: down.name }));
  });
});
