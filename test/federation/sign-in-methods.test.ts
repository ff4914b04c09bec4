import { expect } from 'chai';
import Provider from 'oidc-provider';
import { insertIdentity } from '../../src/db/identities.js';
import { insertPasskey } from '../../src/db/passkeys.js';
import { insertSignInProvider, updateSignInProvider } from '../../src/db/sign-in-providers.js';
import { changing } from '../../src/services/change-versions.js';
import { decoyHash, hasPassword, noPasswordHash, type KdfQueue } from '../../src/services/passwords.js';
import { signIn as signInService } from '../../src/services/users.js';
import type { Limits } from '../../src/services/limits.js';
import { now } from '../../src/time.js';
import { describeEachProfile, listen, useHooks, useIdp, type RunningIdp } from '../helpers/app.js';
import { Browser, signIn, type Page } from '../helpers/browser.js';
import { makeUser, type TestUser } from '../helpers/factories.js';
import { errorMessage, fieldError, filled, formOf, formsOf, parseForms, unescapeHtml } from '../helpers/html.js';
import { ageSession } from '../helpers/sessions.js';
import { linkIn, useMailServer } from '../helpers/smtp.js';

const METHODS = '/account/settings/sign-in-methods';
const NEW_PASSWORD = 'a long new passphrase 42';

const unique = () => Math.random().toString(36).slice(2, 8);

/** Moves the proofs of the session `browser` holds `minutes` into the past (see ageSession). */
const age = (idp: RunningIdp, browser: Browser, minutes: number) => ageSession(idp, browser.cookies().get('idp_session'), minutes);

/**
 * A real upstream OpenID Provider (oidc-provider, as any OpenID Connect issuer answers), so that a
 * Link started here goes to an upstream that exists.
 */
function useUpstream() {
  return useHooks(async () => {
    const { server, url, close } = await listen();
    const upstream = new Provider(url, { clients: [{ client_id: 'horizon', client_secret: 'upstream secret', redirect_uris: ['http://127.0.0.1/unused'] }] });
    server.on('request', upstream.callback());
    return { url, close };
  }, (upstream) => upstream.close());
}

describeEachProfile('Account settings → Sign-in methods', (profile) => {
  const smtp = useMailServer();
  const upstream = useUpstream();
  const idp = useIdp(profile, () => ({ SMTP_URL: smtp.url }));

  async function makeProvider(options: { name?: string; disabled?: boolean } = {}) {
    const slug = `up-${unique()}`;
    const row = await insertSignInProvider(idp.db, {
      slug,
      kind: 'oidc',
      name: options.name ?? `Upstream ${slug}`,
      client_id: 'horizon',
      client_secret: 'upstream secret',
      scopes: 'openid email profile',
      settings: JSON.stringify({ issuer: upstream.url }),
      allow_sign_up: false,
      allowed_domains: '',
      trust_mfa: false,
      position: 0,
    }, now());
    if (!row) throw new Error('provider not inserted');
    if (options.disabled) await updateSignInProvider(idp.db, row.id, { disabled_at: now() }, now());
    return row;
  }

  async function link(user: TestUser, provider: { id: number }, username = `octo-${unique()}`) {
    const inserted = await insertIdentity(idp.db, { userId: user.id, providerId: provider.id, subject: `sub-${unique()}`, username, email: user.email, at: now() });
    if (!inserted) throw new Error('identity not inserted');
    return (await idp.db('user_identities').where({ user_id: user.id, provider_id: provider.id }).first()) as { id: number; username: string };
  }

  /** An account signed in in `browser`, then left without a password, as one an upstream sign-in made. */
  async function withoutPassword(): Promise<{ user: TestUser; browser: Browser }> {
    const user = await makeUser(idp.db);
    const browser = await signIn(idp.url, user);
    await changing(idp.db, [`user:${user.id}`], () => idp.db('users').where({ id: user.id }).update({ password_hash: noPasswordHash() }));
    return { user, browser };
  }

  const identitiesOf = async (user: TestUser) => (await idp.db('user_identities').where({ user_id: user.id }).orderBy('id').select('id')).map((row: { id: number }) => row.id);
  const auditOf = (user: TestUser, action: string) => idp.db('audit_events').where({ user_id: user.id, action }).select('details', 'ip');

  /** The Unlink form of the identity `id` on the page. */
  const unlinkForm = (page: Page, id: number) => formOf(page.text, `${METHODS}/identities/${id}/unlink`);

  it('is in the Account settings tabs and lists the password, passkeys and each linked identity; Link only for enabled providers not linked yet', async () => {
    const user = await makeUser(idp.db);
    const linked = await makeProvider({ name: 'Example SSO' });
    const other = await makeProvider({ name: 'Other IdP' });
    const off = await makeProvider({ name: 'Retired IdP', disabled: true });
    const identity = await link(user, linked, 'octocat');
    await idp.db('user_identities').where({ id: identity.id }).update({ last_used_at: '2026-01-02T03:04:05.000Z' });
    const browser = await signIn(idp.url, user);
    const settings = await browser.get('/account/settings/profile').expect(200);
    expect(settings.text).to.include(`href="${METHODS}"`);
    const page = await browser.get(METHODS).expect(200);
    expect(page.text).to.include('<h1>Sign-in methods</h1>');
    expect(page.text).to.match(/data-testid="password-status">Set\./);
    expect(page.text).to.include('data-testid="passkey-count">You have no passkeys.');
    expect(page.text).to.include('data-testid="identity-provider">Example SSO<');
    expect(page.text).to.include('data-testid="identity-username">octocat<');
    expect(page.text).to.include('<time datetime="2026-01-02T03:04:05.000Z">');
    expect(formsOf(page.text, '/unlink')).to.have.length(1);
    const linkActions = parseForms(page.text, `${METHODS}/link/`).map((form) => form.action);
    expect(linkActions).to.deep.equal([`${METHODS}/link/${other.slug}`]);
    expect(linkActions.join()).not.to.include(off.slug);
  });

  describe('an account without a password', () => {
    it('is sent from the Password page to Set a password, and sets one through the form: it signs in with it, with a notice and an audit entry', async () => {
      const { user, browser } = await withoutPassword();
      await browser.get('/account/settings/password').expect(302, METHODS);
      const page = await browser.get(METHODS).expect(200);
      expect(page.text).to.include('Your account has no password');
      const form = formOf(page.text, `${METHODS}/password`);
      await browser.postForm(form.action, filled(form, { password: NEW_PASSWORD, password_confirmation: NEW_PASSWORD })).expect(302, `${METHODS}?notice=password-set`);
      const after = await browser.get(`${METHODS}?notice=password-set`).expect(200);
      expect(after.text).to.include('data-testid="notice">Password set.');
      expect(after.text).to.match(/data-testid="password-status">Set\./);
      expect(hasPassword((await idp.db('users').where({ id: user.id }).first()).password_hash)).to.equal(true);
      await signIn(idp.url, { username: user.username, password: NEW_PASSWORD });
      expect(await auditOf(user, 'user.password.set')).to.have.length(1);
      const mail = await smtp.nextWith(user.email, 'A password was set');
      expect(mail.text).to.include('A password was set for your account, which had none');
    });

    it('shows each problem of the new password next to its field and sets nothing', async () => {
      const { user, browser } = await withoutPassword();
      const page = await browser.get(METHODS).expect(200);
      const form = formOf(page.text, `${METHODS}/password`);
      const refused = await browser.postForm(form.action, filled(form, { password: 'password', password_confirmation: 'something else' })).expect(400);
      expect(fieldError(refused.text, 'password')).to.match(/^New password /);
      expect(fieldError(refused.text, 'password_confirmation')).to.equal('The two passwords do not match');
      const short = await browser.postForm(form.action, filled(form, { password: 'short', password_confirmation: 'short' })).expect(400);
      expect(fieldError(short.text, 'password')).to.equal('New password must be at least 8 characters');
      expect(hasPassword((await idp.db('users').where({ id: user.id }).first()).password_hash)).to.equal(false);
    });

    it('needs a recent proof: a session signed in over 10 minutes ago gets the prompt, which asks for no password it does not have', async () => {
      const { user, browser } = await withoutPassword();
      const page = await browser.get(METHODS).expect(200);
      await age(idp, browser, 11);
      const form = formOf(page.text, `${METHODS}/password`);
      const prompt = await browser.postForm(form.action, filled(form, { password: NEW_PASSWORD, password_confirmation: NEW_PASSWORD })).expect(403);
      expect(prompt.text).to.include('<h1>Confirm access</h1>');
      expect(prompt.text).to.include('To set a password, confirm it is you: sign out and sign in again.');
      expect(parseForms(prompt.text, METHODS)).to.deep.equal([]);
      // Signing in again is the proof it has: the prompt signs this browser out for that.
      const again = formOf(prompt.text, '/logout');
      await browser.postForm(again.action, filled(again)).expect(302, '/login');
      await browser.get(METHODS).expect(302);
      expect(hasPassword((await idp.db('users').where({ id: user.id }).first()).password_hash)).to.equal(false);
    });

    it('refuses to sign in with any password, after as long a check as an unknown name gets', async () => {
      const { user } = await withoutPassword();
      const fresh = new Browser(idp.url);
      await fresh.get('/login').expect(200);
      const refused = await fresh.submit('/login', { login: user.username, password: 'any password at all' }).expect(401);
      expect(fieldError(refused.text, 'login')).to.equal('Incorrect username, email or password.');
      // The check itself: the decoy hash is what the password is verified against, not the stored value.
      const stored = (await idp.db('users').where({ id: user.id }).first()).password_hash as string;
      const verifiedAgainst: string[] = [];
      const kdf = { verify: async (_password: string, hash: string) => (verifiedAgainst.push(hash), true) } as unknown as KdfQueue;
      const limits = { beforeSignIn: async () => ({}), signInFailed: async () => {}, signInSucceeded: async () => {}, signInNotChecked: async () => {} } as unknown as Limits;
      expect(await signInService({ db: idp.db, kdf, limits }, { login: user.username, password: 'any password at all', ip: '127.0.0.1' })).to.equal(undefined);
      expect(verifiedAgainst).to.deep.equal([await decoyHash()]);
      expect(verifiedAgainst).not.to.include(stored);
    });

    it('changes its e-mail address without a current password it does not have, after Confirm access when the session is old', async () => {
      const { user, browser } = await withoutPassword();
      const page = await browser.get('/account/settings/profile').expect(200);
      const form = formOf(page.text, '/account/settings/profile');
      expect(form.fields).not.to.have.property('current_password');
      await age(idp, browser, 11);
      const newAddress = `moved-${unique()}@example.test`;
      const prompt = await browser.postForm(form.action, filled(form, { email: newAddress })).expect(403);
      expect(prompt.text).to.include('To change your e-mail address, confirm it is you: sign out and sign in again.');
      expect(await idp.db('email_changes').where({ user_id: user.id }).first()).to.equal(undefined);
      await age(idp, browser, -11);
      await browser.postForm(form.action, filled(form, { email: newAddress })).expect(302, '/account/settings/profile?notice=email-pending');
      await smtp.nextWith(newAddress, 'Confirm your new e-mail address');
    });

    it('deletes the account without a password it does not have, after Confirm access when the session is old', async () => {
      const { user, browser } = await withoutPassword();
      const page = await browser.get('/account/settings/delete').expect(200);
      const form = formOf(page.text, '/account/settings/delete');
      expect(Object.keys(form.fields)).to.deep.equal(['_csrf']);
      await age(idp, browser, 11);
      await browser.postForm(form.action, filled(form)).expect(403);
      expect(await idp.db('users').where({ id: user.id }).first()).not.to.equal(undefined);
      await age(idp, browser, -11);
      await browser.postForm(form.action, filled(form)).expect(302, '/account/deleted');
      expect(await idp.db('users').where({ id: user.id }).first()).to.equal(undefined);
    });

    it('sets a first password through Forgot password?', async () => {
      const { user } = await withoutPassword();
      const browser = new Browser(idp.url);
      const forgot = await browser.get('/forgot-password').expect(200);
      const forgotForm = formOf(forgot.text, '/forgot-password');
      await browser.postForm(forgotForm.action, filled(forgotForm, { email: user.email })).expect(302);
      const reset = await browser.get(linkIn(await smtp.nextWith(user.email, 'Reset your password'), idp.url)).expect(200);
      const form = formOf(reset.text, '/reset-password');
      await browser.postForm(form.action, filled(form, { password: NEW_PASSWORD, password_confirmation: NEW_PASSWORD })).expect(302, '/reset-password/done');
      await signIn(idp.url, { username: user.username, password: NEW_PASSWORD });
    });
  });

  describe('Unlink', () => {
    it('is refused, saying why, when the identity is the last way in', async () => {
      const { user, browser } = await withoutPassword();
      const provider = await makeProvider({ name: 'Only Way' });
      const identity = await link(user, provider);
      const page = await browser.get(METHODS).expect(200);
      const form = unlinkForm(page, identity.id);
      const refused = await browser.postForm(form.action, filled(form)).expect(409);
      expect(errorMessage(refused.text)).to.equal('Only Way is the only way you can sign in to this account. Set a password or add a passkey first, then unlink it.');
      expect(await identitiesOf(user)).to.deep.equal([identity.id]);
      expect(await auditOf(user, 'user.identity.unlink')).to.deep.equal([]);
    });

    it('is refused when the only other identity is of a disabled provider', async () => {
      const { user, browser } = await withoutPassword();
      const enabled = await link(user, await makeProvider());
      const retired = await makeProvider();
      await link(user, retired);
      await updateSignInProvider(idp.db, retired.id, { disabled_at: now() }, now());
      const page = await browser.get(METHODS).expect(200);
      const form = unlinkForm(page, enabled.id);
      await browser.postForm(form.action, filled(form)).expect(409);
      expect(await identitiesOf(user)).to.have.length(2);
    });

    it('unlinks with a password left: the page says so once, a notice is mailed and the audit trail records it', async () => {
      const user = await makeUser(idp.db);
      const provider = await makeProvider({ name: 'Example SSO' });
      const identity = await link(user, provider, 'octocat');
      const browser = await signIn(new Browser(idp.url, { userAgent: 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0' }), user);
      const page = await browser.get(METHODS).expect(200);
      const form = unlinkForm(page, identity.id);
      const done = await browser.postForm(form.action, filled(form)).expect(302);
      const location = done.headers.get('location')!;
      expect(location).to.equal(`${METHODS}?notice=unlinked&provider=${provider.slug}`);
      const after = await browser.get(location).expect(200);
      expect(after.text).to.include('data-testid="notice">Unlinked Example SSO.<');
      expect(after.text).to.include('data-testid="no-identities"');
      // Post/Redirect/Get: the page shown has no form that would unlink again.
      expect(formsOf(after.text, '/unlink')).to.deep.equal([]);
      expect(await identitiesOf(user)).to.deep.equal([]);
      const [entry] = await auditOf(user, 'user.identity.unlink');
      expect(JSON.parse(entry.details)).to.deep.equal({ provider: provider.slug, username: 'octocat' });
      const mail = await smtp.nextWith(user.email, 'A sign-in method was unlinked');
      expect(mail.text).to.include('Example SSO no longer signs in to your account.');
      expect(mail.text).to.match(/^Browser: +Firefox/m);
      expect(mail.text).to.include(`${idp.url}${METHODS}`);
    });

    it('needs a recent proof: an old session gets the prompt, then the password unlinks', async () => {
      const user = await makeUser(idp.db);
      const identity = await link(user, await makeProvider());
      const browser = await signIn(idp.url, user);
      const page = await browser.get(METHODS).expect(200);
      await age(idp, browser, 11);
      const form = unlinkForm(page, identity.id);
      const prompt = await browser.postForm(form.action, filled(form)).expect(403);
      expect(prompt.text).to.include('To unlink a sign-in method, enter your password again.');
      expect(await identitiesOf(user)).to.deep.equal([identity.id]);
      const confirm = formOf(prompt.text, `${METHODS}/identities/${identity.id}/unlink`);
      const wrong = await browser.postForm(confirm.action, filled(confirm, { confirm_password: 'not the password' })).expect(400);
      expect(fieldError(wrong.text, 'confirm_password')).to.equal('The current password is incorrect.');
      expect(await identitiesOf(user)).to.deep.equal([identity.id]);
      const again = formOf(wrong.text, `${METHODS}/identities/${identity.id}/unlink`);
      await browser.postForm(again.action, filled(again, { confirm_password: user.password })).expect(302, /notice=unlinked/);
      expect(await identitiesOf(user)).to.deep.equal([]);
    });

    it('answers 16 unlinks at once of the last two identities of an account without a password: exactly one goes through', async () => {
      const { user, browser } = await withoutPassword();
      const first = await link(user, await makeProvider());
      const second = await link(user, await makeProvider());
      const page = await browser.get(METHODS).expect(200);
      const forms = [unlinkForm(page, first.id), unlinkForm(page, second.id)];
      const answers = await Promise.all(Array.from({ length: 16 }, (_, i) => browser.postForm(forms[i % 2]!.action, filled(forms[i % 2]!))));
      const statuses = answers.map((answer) => answer.status);
      expect(statuses.filter((status) => status === 302), statuses.join()).to.have.length(1);
      expect(statuses.filter((status) => status !== 302).every((status) => status === 409 || status === 404), statuses.join()).to.equal(true);
      expect(await identitiesOf(user)).to.have.length(1);
      expect(await auditOf(user, 'user.identity.unlink')).to.have.length(1);
    });

    it('answers an identity of another account, or none, with 404 and unlinks nothing', async () => {
      const owner = await makeUser(idp.db);
      const theirs = await link(owner, await makeProvider());
      const user = await makeUser(idp.db);
      const mine = await link(user, await makeProvider());
      const browser = await signIn(idp.url, user);
      const page = await browser.get(METHODS).expect(200);
      const form = unlinkForm(page, mine.id);
      await browser.postForm(form.action.replace(`/${mine.id}/`, `/${theirs.id}/`), filled(form)).expect(404);
      await browser.postForm(form.action.replace(`/${mine.id}/`, '/not-a-number/'), filled(form)).expect(404);
      expect(await identitiesOf(owner)).to.deep.equal([theirs.id]);
    });

    it('refuses a post without the CSRF token', async () => {
      const user = await makeUser(idp.db);
      const identity = await link(user, await makeProvider());
      const browser = await signIn(idp.url, user);
      await browser.postForm(`${METHODS}/identities/${identity.id}/unlink`, {}).expect(403);
      expect(await identitiesOf(user)).to.deep.equal([identity.id]);
    });
  });

  describe('Passkeys of an account without a password', () => {
    const PASSKEYS = '/account/settings/passkeys';
    const addPasskey = async (user: TestUser) => {
      await insertPasskey(idp.db, { userId: user.id, credentialId: `cred-${unique()}`, publicKey: 'cHVibGlj', counter: 0, transports: '', name: 'Laptop', at: now() });
      return (await idp.db('webauthn_credentials').where({ user_id: user.id }).first('id')).id as number;
    };
    const passkeysOf = async (user: TestUser) => (await idp.db('webauthn_credentials').where({ user_id: user.id }).select('id')).length;

    it('keeps the last passkey when it is the only way in, saying why', async () => {
      const { user, browser } = await withoutPassword();
      const id = await addPasskey(user);
      const page = await browser.get(PASSKEYS).expect(200);
      const form = formOf(page.text, `${PASSKEYS}/${id}/remove`);
      // No password field for an account that has none.
      expect(Object.keys(form.fields)).to.deep.equal(['_csrf']);
      const refused = await browser.postForm(form.action, filled(form)).expect(409);
      expect(errorMessage(refused.text)).to.equal('This passkey is the only way you can sign in to this account. Set a password or link another sign-in method first, then remove it.');
      expect(await passkeysOf(user)).to.equal(1);
    });

    it('removes a passkey while a linked identity remains, after Confirm access when the session is old', async () => {
      const { user, browser } = await withoutPassword();
      await link(user, await makeProvider());
      const id = await addPasskey(user);
      const page = await browser.get(PASSKEYS).expect(200);
      await age(idp, browser, 11);
      const form = formOf(page.text, `${PASSKEYS}/${id}/remove`);
      const prompt = await browser.postForm(form.action, filled(form)).expect(403);
      expect(prompt.text).to.include('To remove a passkey, confirm it is you with a second factor or a passkey, or sign out and sign in again.');
      expect(prompt.text).to.include('data-testid="confirm-passkey-form"');
      expect(await passkeysOf(user)).to.equal(1);
      await age(idp, browser, -11);
      await browser.postForm(form.action, filled(form)).expect(302, `${PASSKEYS}?notice=removed`);
      expect(await passkeysOf(user)).to.equal(0);
    });
  });

  describe('Link another provider', () => {
    it('needs a recent proof, then sends the browser on to the upstream round trip', async () => {
      const user = await makeUser(idp.db);
      const provider = await makeProvider({ name: 'Example SSO' });
      const browser = await signIn(idp.url, user);
      const page = await browser.get(METHODS).expect(200);
      expect(page.text).to.include('Link Example SSO');
      await age(idp, browser, 11);
      const form = formOf(page.text, `${METHODS}/link/${provider.slug}`);
      const prompt = await browser.postForm(form.action, filled(form)).expect(403);
      expect(prompt.text).to.include('To link a sign-in method, enter your password again.');
      const confirm = formOf(prompt.text, `${METHODS}/link/${provider.slug}`);
      // The round trip starts on a page that moves on by itself to the upstream's authorization endpoint.
      const started = await browser.postForm(confirm.action, filled(confirm, { confirm_password: user.password })).expect(200);
      const href = unescapeHtml(/href="([^"]+)" data-testid="upstream-continue"/.exec(started.text)?.[1] ?? '');
      const location = new URL(href);
      expect(`${location.origin}${location.pathname}`).to.equal(`${upstream.url}/auth`);
      expect(location.searchParams.get('redirect_uri')).to.equal(`${idp.url}/login/callback/${provider.slug}`);
      expect(location.searchParams.get('code_challenge_method')).to.equal('S256');
      expect(await identitiesOf(user)).to.deep.equal([]);
    });

    it('waits for a verified address, as adding a passkey does', async () => {
      const user = await makeUser(idp.db, { verified: false });
      const provider = await makeProvider();
      const browser = await signIn(idp.url, user);
      const page = await browser.get(METHODS).expect(200);
      expect(page.text).to.include('data-testid="verify-first"');
      expect(parseForms(page.text, `${METHODS}/link/`)).to.deep.equal([]);
      const refused = await browser.postForm(`${METHODS}/link/${provider.slug}`, { _csrf: browser.csrf }).expect(403);
      expect(refused.text).to.include('link a sign-in method');
    });

    it('refuses a provider that is disabled or unknown with 404', async () => {
      const user = await makeUser(idp.db);
      const off = await makeProvider({ disabled: true });
      await makeProvider();
      const browser = await signIn(idp.url, user);
      const page = await browser.get(METHODS).expect(200);
      const form = formsOf(page.text, `${METHODS}/link/`)[0]!;
      await browser.postForm(`${METHODS}/link/${off.slug}`, filled(form)).expect(404);
      await browser.postForm(`${METHODS}/link/no-such-provider`, filled(form)).expect(404);
    });

    it('says "Linked <provider>." on the page the round trip comes back to', async () => {
      const user = await makeUser(idp.db);
      await link(user, await makeProvider({ name: 'First IdP' }));
      await new Promise((resolve) => setTimeout(resolve, 5));
      await link(user, await makeProvider({ name: 'Example SSO' }));
      const browser = await signIn(idp.url, user);
      await browser.get('/settings/sign-in-methods?notice=linked').expect(302, `${METHODS}?notice=linked`);
      const page = await browser.get(`${METHODS}?notice=linked`).expect(200);
      expect(page.text).to.include('data-testid="notice">Linked Example SSO.<');
    });
  });
});
