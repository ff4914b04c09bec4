import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { insertIdentity } from '../../src/db/identities.js';
import { findSignInProvider } from '../../src/db/sign-in-providers.js';
import { keyCipher } from '../../src/key-encryption.js';
import { setSiteAdmin } from '../../src/services/admin.js';
import { createProvider, setProviderDisabled } from '../../src/services/federation/manage.js';
import { openClientSecret } from '../../src/services/federation/providers.js';
import { noPasswordHash } from '../../src/services/passwords.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { signIn, visit, type Browser, type Page } from '../helpers/browser.js';
import { makeUser, type TestUser } from '../helpers/factories.js';
import { fieldError, fillForm, formOf, inputValue, unescapeHtml } from '../helpers/html.js';
import { useTestKind } from './admin-test-kind.js';

const KEYS_SECRET = 'a-keys-secret-of-at-least-32-characters!';
const CLI = { userId: 0, ip: null, admin: true };
const unique = () => randomBytes(3).toString('hex');

/** The rows of the admin audit log as "actor action target (details)" lines, newest first. */
function auditLines(html: string): string[] {
  return [...html.matchAll(/<tr data-testid="audit-row">([\s\S]*?)<\/tr>/g)].map((m) =>
    unescapeHtml(m[1]!.replace(/<time[\s\S]*?<\/time>/, '').replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ').trim()));
}

function listedSlugs(html: string): string[] {
  return [...html.matchAll(/data-testid="provider-row" data-slug="([^"]+)"/g)].map((m) => m[1]!);
}

function testid(html: string, id: string): string | undefined {
  const found = new RegExp(`data-testid="${id}"[^>]*>([\\s\\S]*?)</`).exec(html)?.[1];
  return found === undefined ? undefined : unescapeHtml(found.replace(/<[^>]+>/g, '')).replace(/\s+/g, ' ').trim();
}

/** The text of the paragraph with that test id, inline markup dropped. */
function paragraph(html: string, id: string): string | undefined {
  const found = new RegExp(`<p[^>]*data-testid="${id}"[^>]*>([\\s\\S]*?)</p>`).exec(html)?.[1];
  return found === undefined ? undefined : unescapeHtml(found.replace(/<[^>]+>/g, '')).replace(/\s+/g, ' ').trim();
}

describeEachProfile('Admin → Sign-in providers', (profile) => {
  const kind = useTestKind();
  const idp = useIdp(profile, { KEYS_SECRET });
  let admin: TestUser;
  let site: Browser;
  const db = () => idp.db;

  before(async () => {
    admin = await makeUser(idp.db, { username: `root-${unique()}` });
    await setSiteAdmin(idp.db, CLI, admin, true);
    site = await signIn(idp.url, admin);
  });

  /** Opens Add, picks the test kind on the first page, and returns the kind's form. */
  async function addForm(): Promise<Page> {
    const list = await site.get('/admin/providers').expect(200);
    expect(list.text).to.contain('href="/admin/providers/new"');
    const picker = await site.get('/admin/providers/new').expect(200);
    const { action, fields } = fillForm(picker.text, '/admin/providers/new', { [kind.label]: 'checked' });
    return site.get(`${action}?${fields.toString()}`).expect(200);
  }

  /** Adds through the form, filled by label; `.expect` as a browser request's. */
  function addThroughForm(byLabel: Record<string, string>) {
    return { expect: async (status: number, location?: string) => site.fill(await addForm(), '/admin/providers', byLabel).expect(status, location) };
  }

  const filledIn = (slug: string, extra: Record<string, string> = {}) => ({
    'Display name': `Corp ${slug}`,
    Slug: slug,
    'Issuer URL': 'https://sso.example.com/',
    'Client ID': `client-${slug}`,
    'Client secret': `s3cret-${slug}-value`,
    ...extra,
  });

  it('has a Sign-in providers tab in the Admin area', async () => {
    const page = await site.get('/admin/users').expect(200);
    expect(page.text).to.match(/<a href="\/admin\/providers"[^>]*>Sign-in providers<\/a>/);
  });

  it('adds a provider through its form: the kind first, then its fields, and shows its callback URL', async () => {
    const slug = `corp-${unique()}`;
    const added = await addThroughForm(filledIn(slug, {
      'Allow new accounts': 'checked',
      'Allowed e-mail domains': 'Example.COM, bücher.example',
      'Trust its two-factor': 'checked',
      Tenant: 'ACME',
    })).expect(302, `/admin/providers/${slug}?notice=added`);
    const page = await site.get(added.headers.get('location')!).expect(200);
    expect(testid(page.text, 'provider-name')).to.equal(`Corp ${slug}`);
    expect(/id="callback-url"[^>]*value="([^"]+)"/.exec(page.text)?.[1]).to.equal(`${idp.url}/login/callback/${slug}`);
    expect(page.text).to.match(/<input id="callback-url" type="text" readonly/);
    expect(page.text).to.contain('data-copy="#callback-url"');
    expect(testid(page.text, 'allowed-domains')).to.equal('example.com xn--bcher-kva.example');
    expect(testid(page.text, 'allow-sign-up')).to.equal('On');
    expect(testid(page.text, 'trust-mfa')).to.equal('On');
    const row = (await findSignInProvider(db(), slug))!;
    expect(row.kind).to.equal(kind.kind);
    expect(JSON.parse(row.settings)).to.deep.equal({ issuer: 'https://sso.example.com', tenant_id: 'acme' });
    expect(row.scopes, 'the kind\'s default scopes when none are typed').to.equal('openid email');
    const list = await site.get('/admin/providers').expect(200);
    expect(listedSlugs(list.text)).to.include(slug);
  });

  it('seals the client secret with KEYS_SECRET and shows it on no page', async () => {
    const slug = `sealed-${unique()}`;
    const secret = `never-shown-${unique()}-secret`;
    await addThroughForm(filledIn(slug, { 'Client secret': secret })).expect(302);
    const row = (await findSignInProvider(db(), slug))!;
    expect(row.client_secret).to.match(/^enc:v1:/);
    expect(row.client_secret).not.to.contain(secret);
    expect(openClientSecret(keyCipher(KEYS_SECRET), row.client_secret)).to.equal(secret);
    for (const path of [`/admin/providers/${slug}`, `/admin/providers/${slug}/edit`, '/admin/providers', `/admin/providers/${slug}/remove`, '/admin/audit']) {
      const page = await site.get(path).expect(200);
      expect(page.text, path).not.to.contain(secret);
    }
    // An edit with errors shows the form again without the secret typed into it.
    const edit = await site.get(`/admin/providers/${slug}/edit`).expect(200);
    const refused = await site.fill(edit, `/admin/providers/${slug}/edit`, { 'Display name': '', 'Client secret': `${secret}-new` }).expect(400);
    expect(refused.text).not.to.contain(`${secret}-new`);
  });

  it('re-shows the form naming each bad field, keeping the values typed but never the secret', async () => {
    const form = await addForm();
    const refused = await site.fill(form, '/admin/providers', {
      'Display name': 'Bad one',
      Slug: 'Bad Slug!',
      'Issuer URL': 'http://not-https.example',
      'Client ID': 'ok-client',
      'Client secret': 'typed-secret-xyz',
      Scopes: 'openid "quoted"',
      'Allowed e-mail domains': 'example.com not a domain@',
      Position: 'first',
    }).expect(400);
    expect(fieldError(refused.text, 'slug')).to.match(/^Slug must be 2 to 40 characters/);
    expect(fieldError(refused.text, 'issuer')).to.equal('Issuer URL must be an absolute https URL');
    expect(fieldError(refused.text, 'scopes')).to.match(/^Scopes must be scope names/);
    expect(fieldError(refused.text, 'allowed_domains')).to.match(/^Allowed e-mail domains must be e-mail domains/);
    expect(fieldError(refused.text, 'position')).to.match(/^Position must be a whole number/);
    expect(fieldError(refused.text, 'name')).to.equal(undefined);
    expect(inputValue(refused.text, 'name')).to.equal('Bad one');
    expect(inputValue(refused.text, 'slug')).to.equal('Bad Slug!');
    expect(refused.text).not.to.contain('typed-secret-xyz');
    // The form shown again still posts as the test kind: it is the same form.
    expect(formOf(refused.text, '/admin/providers').fields.kind).to.equal(kind.kind);
    const missing = await site.fill(form, '/admin/providers', { 'Display name': '', Slug: '', 'Issuer URL': '', 'Client ID': '', 'Client secret': '' }).expect(400);
    for (const [field, label] of [['name', 'Display name'], ['slug', 'Slug'], ['issuer', 'Issuer URL'], ['client_id', 'Client ID'], ['client_secret', 'Client secret']]) {
      expect(fieldError(missing.text, field!), field).to.equal(`${label} is required`);
    }
  });

  it('refuses a taken or reserved slug by name', async () => {
    const slug = `taken-${unique()}`;
    await addThroughForm(filledIn(slug)).expect(302);
    const again = await addThroughForm(filledIn(slug)).expect(409);
    expect(fieldError(again.text, 'slug')).to.match(/taken/);
    const reserved = await addThroughForm(filledIn('new')).expect(400);
    expect(fieldError(reserved.text, 'slug')).to.match(/reserved/);
  });

  it('edits a provider: an empty secret keeps the current one, a new one replaces it', async () => {
    const slug = `edit-${unique()}`;
    await addThroughForm(filledIn(slug, { 'Client secret': 'first-secret-value' })).expect(302);
    const edit = await site.get(`/admin/providers/${slug}/edit`).expect(200);
    expect(inputValue(edit.text, 'name')).to.equal(`Corp ${slug}`);
    expect(inputValue(edit.text, 'issuer')).to.equal('https://sso.example.com');
    expect(formOf(edit.text, '/edit').fields.client_secret).to.equal('');
    await site.fill(edit, `/admin/providers/${slug}/edit`, { 'Display name': 'Renamed', Scopes: 'openid profile' }).expect(302, `/admin/providers/${slug}?notice=saved`);
    let row = (await findSignInProvider(db(), slug))!;
    expect(row.name).to.equal('Renamed');
    expect(row.scopes).to.equal('openid profile');
    expect(openClientSecret(keyCipher(KEYS_SECRET), row.client_secret)).to.equal('first-secret-value');
    const again = await site.get(`/admin/providers/${slug}/edit`).expect(200);
    await site.fill(again, `/admin/providers/${slug}/edit`, { 'Client secret': 'second-secret-value' }).expect(302, `/admin/providers/${slug}?notice=saved`);
    row = (await findSignInProvider(db(), slug))!;
    expect(openClientSecret(keyCipher(KEYS_SECRET), row.client_secret)).to.equal('second-secret-value');
    const unchanged = await site.get(`/admin/providers/${slug}/edit`).expect(200);
    await site.fill(unchanged, `/admin/providers/${slug}/edit`).expect(302, `/admin/providers/${slug}?notice=unchanged`);
  });

  it('disables and enables a provider, and records each change in the audit log without the secret', async () => {
    const slug = `audit-${unique()}`;
    await addThroughForm(filledIn(slug, { 'Client secret': 'audit-secret-value' })).expect(302);
    let page = await site.get(`/admin/providers/${slug}`).expect(200);
    page = await site.follow(await site.fill(page, `/admin/providers/${slug}/disable`).expect(302)).expect(200);
    expect(testid(page.text, 'status')).to.equal('Disabled');
    expect((await findSignInProvider(db(), slug))!.disabled_at).not.to.equal(null);
    page = await site.follow(await site.fill(page, `/admin/providers/${slug}/enable`).expect(302)).expect(200);
    expect(testid(page.text, 'status')).to.equal('Enabled');
    const edit = await site.get(`/admin/providers/${slug}/edit`).expect(200);
    await site.fill(edit, `/admin/providers/${slug}/edit`, { 'Display name': 'Audited', 'Client secret': 'rotated-secret-value' }).expect(302);
    const audit = await site.get('/admin/audit').expect(200);
    const lines = auditLines(audit.text).filter((line) => line.includes(slug));
    expect(lines[0]).to.match(new RegExp(`^${admin.username} Sign-in provider changed ${slug} \\(.*name: Corp ${slug} → Audited.*client_secret: replaced`));
    expect(lines[1]).to.match(new RegExp(`^${admin.username} Sign-in provider enabled ${slug}`));
    expect(lines[2]).to.match(new RegExp(`^${admin.username} Sign-in provider disabled ${slug}`));
    expect(lines[3]).to.match(new RegExp(`^${admin.username} Sign-in provider added ${slug}`));
    expect(audit.text).not.to.contain('audit-secret-value');
    expect(audit.text).not.to.contain('rotated-secret-value');
    const stored = await db()('audit_events').where({ target: slug }).select('details');
    expect(JSON.stringify(stored)).not.to.match(/audit-secret-value|rotated-secret-value|enc:v1:/);
  });

  it('lists each provider with its kind, status and linked identities count', async () => {
    const slug = `count-${unique()}`;
    await addThroughForm(filledIn(slug)).expect(302);
    const row = (await findSignInProvider(db(), slug))!;
    for (let i = 0; i < 2; i += 1) {
      const user = await makeUser(db());
      await insertIdentity(db(), { userId: user.id, providerId: row.id, subject: `sub-${i}`, username: `u${i}`, email: '', at: new Date().toISOString() });
    }
    const list = await site.get('/admin/providers').expect(200);
    const rowHtml = new RegExp(`data-slug="${slug}">([\\s\\S]*?)</tr>`).exec(list.text)![1]!;
    expect(testid(rowHtml, 'identities')).to.equal('2');
    expect(testid(rowHtml, 'status')).to.equal('Enabled');
    expect(rowHtml).to.contain(kind.label);
  });

  it('removes a provider after a page counting its identities and the accounts left with no way in', async () => {
    const slug = `gone-${unique()}`;
    await addThroughForm(filledIn(slug)).expect(302);
    const row = (await findSignInProvider(db(), slug))!;
    const withPassword = await makeUser(db());
    const onlyThrough = await makeUser(db());
    const alsoAtADisabledOne = await makeUser(db());
    const alsoAtAnEnabledOne = await makeUser(db());
    for (const user of [onlyThrough, alsoAtADisabledOne, alsoAtAnEnabledOne]) await db()('users').where({ id: user.id }).update({ password_hash: noPasswordHash() });
    const manage = { db: db(), cipher: undefined };
    const other = { kind: kind.kind, name: 'Other', client_id: 'c', client_secret: 's', settings: { issuer: 'https://other.example' } };
    const disabledOther = await createProvider(manage, CLI, { ...other, slug: `off-${unique()}` });
    await setProviderDisabled(db(), CLI, disabledOther, true);
    const enabledOther = await createProvider(manage, CLI, { ...other, slug: `on-${unique()}` });
    const at = new Date().toISOString();
    for (const [i, user] of [withPassword, onlyThrough, alsoAtADisabledOne, alsoAtAnEnabledOne].entries()) {
      await insertIdentity(db(), { userId: user.id, providerId: row.id, subject: `gone-${i}`, username: `g${i}`, email: '', at });
    }
    await insertIdentity(db(), { userId: alsoAtADisabledOne.id, providerId: disabledOther.id, subject: 'off', username: 'off', email: '', at });
    await insertIdentity(db(), { userId: alsoAtAnEnabledOne.id, providerId: enabledOther.id, subject: 'on', username: 'on', email: '', at });
    const provider = await site.get(`/admin/providers/${slug}`).expect(200);
    expect(provider.text).to.contain(`href="/admin/providers/${slug}/remove"`);
    const confirm = await site.get(`/admin/providers/${slug}/remove`).expect(200);
    expect(paragraph(confirm.text, 'identities')).to.match(/unlinks the 4 identities/);
    expect(paragraph(confirm.text, 'only-through-it')).to.match(/^2 accounts have no other way to sign in.*password reset/);
    await site.fill(confirm, `/admin/providers/${slug}/remove`).expect(302, '/admin/providers?notice=removed');
    expect(await findSignInProvider(db(), slug)).to.equal(undefined);
    expect(await db()('user_identities').where({ provider_id: row.id })).to.have.length(0);
    expect(await db()('users').where({ id: onlyThrough.id }).first()).to.not.equal(undefined);
    const audit = await site.get('/admin/audit').expect(200);
    expect(auditLines(audit.text).find((line) => line.includes(slug))).to.match(/Sign-in provider removed .*identities_unlinked: 4.*accounts_left_without_sign_in: 2/);
  });

  it('answers an unknown or malformed slug with 404', async () => {
    for (const slug of ['nope-nothing', 'UPPER', 'bad_slug', 'a'.repeat(300)]) {
      await site.get(`/admin/providers/${slug}`).expect(404);
      await site.submit(`/admin/providers/${slug}/disable`).expect(404);
    }
  });

  it('refuses a form without its CSRF token', async () => {
    const slug = `csrf-${unique()}`;
    await addThroughForm(filledIn(slug)).expect(302);
    const res = await site.postForm(`/admin/providers/${slug}/disable`, {});
    expect(res.status).to.equal(403);
    expect((await findSignInProvider(db(), slug))!.disabled_at).to.equal(null);
  });

  it('is an unknown address to anyone but a site administrator', async () => {
    const slug = `hidden-${unique()}`;
    await addThroughForm(filledIn(slug)).expect(302);
    const member = await signIn(idp.url, await makeUser(db()));
    const visitor = await visit(idp.url);
    for (const who of [member, visitor]) {
      for (const path of ['/admin/providers', '/admin/providers/new', `/admin/providers/${slug}`, `/admin/providers/${slug}/edit`, `/admin/providers/${slug}/remove`]) {
        await who.get(path).expect(404);
      }
      await who.submit(`/admin/providers/${slug}/disable`).expect(404);
      await who.submit(`/admin/providers/${slug}/remove`).expect(404);
      await who.submit('/admin/providers', { kind: kind.kind, slug: `x-${unique()}`, name: 'x', client_id: 'x', client_secret: 'x', issuer: 'https://x.example' }).expect(404);
    }
    const row = (await findSignInProvider(db(), slug))!;
    expect(row.disabled_at).to.equal(null);
  });

  it('creates one provider out of 16 parallel adds of the same slug, the rest told the slug is taken', async () => {
    const slug = `race-${unique()}`;
    const results = await Promise.allSettled(Array.from({ length: 16 }, (_, i) => createProvider({ db: db(), cipher: undefined }, CLI, {
      kind: kind.kind, slug, name: `Race ${i}`, client_id: 'c', client_secret: 's', settings: { issuer: 'https://race.example' },
    })));
    expect(results.filter((r) => r.status === 'fulfilled')).to.have.length(1);
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(refused).to.have.length(15);
    for (const r of refused) expect((r.reason as Error).message).to.equal(`slug "${slug}" is taken by another sign-in provider`);
    expect(await db()('sign_in_providers').where({ slug })).to.have.length(1);
    expect(await db()('audit_events').where({ target: slug, action: 'sign-in_provider.add' })).to.have.length(1);
  });
});
