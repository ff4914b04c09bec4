import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import * as client from 'openid-client';
import { findIdentity, insertIdentity } from '../../src/db/identities.js';
import { insertSignInProvider, updateSignInProvider } from '../../src/db/sign-in-providers.js';
import { findUserByUsername } from '../../src/db/users.js';
import { sealClientSecret } from '../../src/services/federation/providers.js';
import { hasPassword } from '../../src/services/passwords.js';
import { now } from '../../src/time.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { Browser, type Page } from '../helpers/browser.js';
import { groupAccess, makeClient, makeGroup, makeUser } from '../helpers/factories.js';
import { addMember } from '../../src/services/groups.js';
import { filledForm, inputValue, unescapeHtml } from '../helpers/html.js';
import { useMailServer } from '../helpers/smtp.js';
import { withTwoFactor } from '../helpers/totp.js';
import { startSilentServer, startUpstreamProvider, UPSTREAM_CLIENT, type UpstreamPerson } from './upstream-server.js';

/**
 * Signing in with an upstream OpenID Connect provider: a real oidc-provider instance started
 * here (behind a proxy that can make it misbehave), our relying party through openid-client, and
 * every page driven through its own forms.
 */
const SLUGS = ['upstream', 'strict', 'corp', 'trusted', 'off', 'hangs'];
const RP_CALLBACK = 'http://127.0.0.1:9999/third-party/callback';

const unique = () => randomBytes(4).toString('hex');

describeEachProfile('Sign-in with an upstream OpenID Connect provider', (profile) => {
  const smtp = useMailServer();
  const idp = useIdp(profile, () => ({ METRICS_PORT: '0', SMTP_URL: smtp.url }));
  let upstream: Awaited<ReturnType<typeof startUpstreamProvider>>;
  let silent: Awaited<ReturnType<typeof startSilentServer>>;
  const providerIds: Record<string, number> = {};

  async function addProvider(slug: string, options: { issuer?: string; allowSignUp?: boolean; domains?: string; trustMfa?: boolean } = {}) {
    const row = await insertSignInProvider(idp.db, {
      slug,
      kind: 'oidc',
      name: `Upstream ${slug}`,
      client_id: UPSTREAM_CLIENT.id,
      client_secret: sealClientSecret(undefined, UPSTREAM_CLIENT.secret),
      scopes: '',
      settings: JSON.stringify({ issuer: options.issuer ?? upstream.url }),
      allow_sign_up: options.allowSignUp ?? true,
      allowed_domains: options.domains ?? '',
      trust_mfa: options.trustMfa ?? false,
      position: SLUGS.indexOf(slug),
    }, now());
    providerIds[slug] = row!.id;
  }

  before(async () => {
    upstream = await startUpstreamProvider(() => SLUGS.map((slug) => `${idp.url}/login/callback/${slug}`));
    silent = await startSilentServer();
    await addProvider('upstream');
    await addProvider('strict', { allowSignUp: false });
    await addProvider('corp', { domains: 'corp.example.test' });
    await addProvider('trusted', { trustMfa: true });
    await addProvider('off');
    await addProvider('hangs', { issuer: silent.url });
  });

  after(async () => {
    await upstream?.stop();
    await silent?.stop();
  });

  beforeEach(() => upstream.reset());

  function person(overrides: Partial<UpstreamPerson> = {}): UpstreamPerson {
    const id = unique();
    const p = { sub: `sub-${id}`, email: `person-${id}@example.test`, email_verified: true, name: `Person ${id}`, preferred_username: `person-${id}`, ...overrides };
    upstream.state.person = p;
    return p;
  }

  // Each browser comes from an address of its own: the sign-in limits count failures per address.
  let addresses = 1;
  function browser(): Browser {
    addresses += 1;
    return new Browser(idp.url, { also: [upstream.url], from: `127.0.${Math.floor(addresses / 250)}.${(addresses % 250) + 2}` });
  }

  /** Opens the site's sign-in page and clicks Continue with <slug>; follows the round trip, stopping before the callback when asked. */
  async function continueWith(b: Browser, slug: string, options: { stopAtCallback?: boolean; from?: Page } = {}): Promise<Page> {
    const page = options.from ?? (await b.get('/login').expect(200));
    expect(page.text).to.include(`Continue with Upstream ${slug}`);
    return b.follow(await start(b, page, slug), options.stopAtCallback ? `${idp.url}/login/callback/` : undefined);
  }

  /** Clicks Continue with <slug> (or Try again) on `page`: the page that moves on to the provider, and the authorization request it leads to. */
  async function start(b: Browser, page: Page, slug: string): Promise<string> {
    const moving = await b.fill(page, `/login/upstream/${slug}`).expect(200);
    const href = unescapeHtml(/href="([^"]+)" data-testid="upstream-continue"/.exec(moving.text)?.[1] ?? '');
    expect(moving.text).to.include(`<meta http-equiv="refresh" content="0;url=${href.replaceAll('&', '&amp;')}">`);
    expect(href.startsWith(`${upstream.url}/auth?`), href).to.equal(true);
    return href;
  }

  async function signedInAs(b: Browser): Promise<string | undefined> {
    const page = await b.get('/groups');
    if (page.status !== 200) return undefined;
    return /title="Signed in as ([^"]+)"/.exec(page.text)?.[1];
  }

  async function expectSignedOut(b: Browser): Promise<void> {
    await b.get('/groups').expect(302, /^\/login/);
  }

  it('offers Continue with <name> for each enabled provider on the sign-in page', async () => {
    const page = await browser().get('/login').expect(200);
    for (const slug of ['upstream', 'strict', 'corp', 'trusted', 'off', 'hangs']) expect(page.text).to.include(`Continue with Upstream ${slug}`);
    expect(page.text).to.include('name="password"');
  });

  it('makes a new account from the upstream profile on a prefilled sign-up page, then signs in with it again', async () => {
    const p = person();
    const b = browser();
    const signUp = await continueWith(b, 'upstream');
    expect(signUp.url.pathname).to.equal('/login/continue/sign-up');
    expect(signUp.status).to.equal(200);
    expect(inputValue(signUp.text, 'username')).to.equal(p.preferred_username);
    expect(inputValue(signUp.text, 'name')).to.equal(p.name);
    expect(signUp.text).to.include(p.email!).and.include('data-testid="sign-up-email-verified"');
    const chosen = `chosen-${unique()}`;
    const form = filledForm(signUp.text, '/login/continue/sign-up', { username: chosen });
    await b.postForm(form.action, form.fields).expect(302, '/groups');
    expect(await signedInAs(b)).to.equal(chosen);

    const user = (await findUserByUsername(idp.db, chosen))!;
    expect(user.email).to.equal(p.email);
    expect(user.email_verified_at).to.not.equal(null);
    expect(hasPassword(user.password_hash)).to.equal(false);
    const identity = (await findIdentity(idp.db, providerIds.upstream!, p.sub))!;
    expect(identity.user_id).to.equal(user.id);

    // Signing in again with the same upstream identity goes straight in.
    const again = browser();
    const landed = await continueWith(again, 'upstream');
    expect(landed.url.pathname).to.equal('/groups');
    expect(landed.status).to.equal(200);
    expect(await signedInAs(again)).to.equal(chosen);
    expect((await findIdentity(idp.db, providerIds.upstream!, p.sub))!.last_used_at).to.not.equal(null);
  });

  it('marks the address unverified when the upstream did not verify it, and refuses a taken username on the sign-up page', async () => {
    const taken = await makeUser(idp.db);
    person({ email_verified: false });
    const b = browser();
    const signUp = await continueWith(b, 'upstream');
    expect(signUp.text).to.include('data-testid="sign-up-email-unverified"');
    const refused = await b.postForm('/login/continue/sign-up', filledForm(signUp.text, '/login/continue/sign-up', { username: taken.username }).fields).expect(409);
    expect(refused.text).to.include('already taken');
    const chosen = `unverified-${unique()}`;
    await b.postForm('/login/continue/sign-up', filledForm(refused.text, '/login/continue/sign-up', { username: chosen }).fields).expect(302, '/groups');
    expect((await findUserByUsername(idp.db, chosen))!.email_verified_at).to.equal(null);
  });

  it('asks to sign in to the account with the same verified address, and links only after its password', async () => {
    const owner = await makeUser(idp.db, { email: `owner-${unique()}@example.test` });
    const p = person({ email: owner.email });
    const b = browser();
    const link = await continueWith(b, 'upstream');
    expect(link.url.pathname).to.equal('/login/continue/link');
    expect(link.text).to.include('An account with this address exists');
    expect(link.text).to.include('Sign in to it to link');

    const wrong = await b.fill(link, '/login/continue/link', { Password: 'not the password' }).expect(401);
    expect(wrong.text).to.include('Incorrect password');
    expect(await findIdentity(idp.db, providerIds.upstream!, p.sub)).to.equal(undefined);
    await expectSignedOut(b);

    await b.fill(wrong, '/login/continue/link', { Password: owner.password }).expect(302, '/groups');
    expect(await signedInAs(b)).to.equal(owner.username);
    expect((await findIdentity(idp.db, providerIds.upstream!, p.sub))!.user_id).to.equal(owner.id);
    const notice = await smtp.nextWith(owner.email, 'A sign-in method was linked');
    expect(notice.text).to.include('Your account can now be signed in to with Upstream upstream.');

    // The link is used once: the page again finds nothing waiting.
    await b.get('/login/continue/link').expect(400);
  });

  it('asks for the matched account\'s second factor too before linking', async () => {
    const owner = await makeUser(idp.db, { email: `twofa-${unique()}@example.test` });
    const { codes } = await withTwoFactor(idp.db, owner);
    const p = person({ email: owner.email });
    const b = browser();
    const link = await continueWith(b, 'upstream');
    const noCode = await b.fill(link, '/login/continue/link', { Password: owner.password, 'Two-factor code': '000000' }).expect(400);
    expect(await findIdentity(idp.db, providerIds.upstream!, p.sub)).to.equal(undefined);
    await b.fill(noCode, '/login/continue/link', { Password: owner.password, 'Two-factor code': codes[0]! }).expect(302, '/groups');
    expect((await findIdentity(idp.db, providerIds.upstream!, p.sub))!.user_id).to.equal(owner.id);
  });

  it('never links or signs in with an unverified upstream address equal to an account\'s', async () => {
    const owner = await makeUser(idp.db, { email: `victim-${unique()}@example.test` });
    const p = person({ email: owner.email, email_verified: false });
    const b = browser();
    const page = await continueWith(b, 'upstream');
    expect(page.status).to.equal(403);
    expect(page.text).to.include('has not verified that you own it');
    expect(page.text).to.include('Use another way to sign in');
    expect(await findIdentity(idp.db, providerIds.upstream!, p.sub)).to.equal(undefined);
    await expectSignedOut(b);
  });

  it('refuses an address outside the provider\'s allowed domains', async () => {
    const p = person({ email: `someone-${unique()}@elsewhere.test` });
    const b = browser();
    const page = await continueWith(b, 'corp');
    expect(page.status).to.equal(403);
    expect(page.text).to.include('Addresses at elsewhere.test cannot sign in with Upstream corp');
    expect(await findIdentity(idp.db, providerIds.corp!, p.sub)).to.equal(undefined);
    await expectSignedOut(b);

    // An allowed domain goes on to the sign-up page.
    person({ email: `someone-${unique()}@corp.example.test` });
    expect((await continueWith(browser(), 'corp')).url.pathname).to.equal('/login/continue/sign-up');

    // An identity linked already is held to the domains too (its address at the provider may have changed).
    const owner = await makeUser(idp.db);
    const moved = person({ email: `moved-${unique()}@elsewhere.test` });
    await insertIdentity(idp.db, { userId: owner.id, providerId: providerIds.corp!, subject: moved.sub, username: moved.preferred_username!, email: moved.email!, at: now() });
    const linkedRefused = browser();
    expect((await continueWith(linkedRefused, 'corp')).status).to.equal(403);
    await expectSignedOut(linkedRefused);
  });

  it('makes no account when the provider does not allow new accounts', async () => {
    person();
    const b = browser();
    const page = await continueWith(b, 'strict');
    expect(page.status).to.equal(403);
    expect(page.text).to.include('new accounts cannot be made with Upstream strict');
    await expectSignedOut(b);
  });

  it('refuses a provider disabled after the sign-in page was shown, and hides its button', async () => {
    person();
    const b = browser();
    const page = await b.get('/login').expect(200);
    await updateSignInProvider(idp.db, providerIds.off!, { disabled_at: now() }, now());
    const refused = await b.fill(page, '/login/upstream/off').expect(403);
    expect(refused.text).to.include('Signing in with Upstream off is turned off');
    expect((await b.get('/login').expect(200)).text).to.not.include('Continue with Upstream off');
  });

  it('says the person declined upstream (access_denied), offering to try again or another way', async () => {
    upstream.state.deny = true;
    const b = browser();
    const page = await continueWith(b, 'upstream');
    expect(page.status).to.equal(403);
    expect(page.text).to.include('the request was declined there');
    expect(page.text).to.include('Try again').and.include('Use another way to sign in');
    await expectSignedOut(b);
    // Try again starts a new round trip, which now signs in.
    upstream.state.deny = false;
    person();
    const retried = await b.follow(await start(b, page, 'upstream'));
    expect(retried.url.pathname).to.equal('/login/continue/sign-up');
  });

  it('refuses an answer whose state belongs to another browser\'s sign-in', async () => {
    person();
    const victim = browser();
    await continueWith(victim, 'upstream', { stopAtCallback: true });
    const attacker = browser();
    const attackersAnswer = await continueWith(attacker, 'upstream', { stopAtCallback: true });
    const page = await victim.get(attackersAnswer.headers.get('location')!).expect(400);
    expect(page.text).to.include('does not belong to the sign-in started in this browser');
    await expectSignedOut(victim);
  });

  it('refuses a callback opened again (Back, reload, a replay) with a clear page', async () => {
    const p = person();
    const b = browser();
    const answer = await continueWith(b, 'upstream', { stopAtCallback: true });
    const callback = answer.headers.get('location')!;
    await b.get(callback).expect(302, '/login/continue/sign-up');
    const again = await b.get(callback).expect(400);
    expect(again.text).to.include('already finished');
    // In another browser, without the round trip, as well.
    const replayed = await browser().get(callback).expect(400);
    expect(replayed.text).to.include('already finished');
    expect(await findIdentity(idp.db, providerIds.upstream!, p.sub)).to.equal(undefined);
  });

  for (const [tamper, what] of [['nonce', 'an ID token with another nonce'], ['audience', 'an ID token for another audience'], ['iss', 'an authorization response whose iss names another issuer']] as const) {
    it(`refuses ${what}`, async () => {
      const p = person();
      upstream.state.tamper = tamper;
      const b = browser();
      const page = await continueWith(b, 'upstream');
      expect(page.status, page.text.slice(0, 300)).to.equal(424);
      expect(page.text).to.include('answer could not be verified');
      expect(await findIdentity(idp.db, providerIds.upstream!, p.sub)).to.equal(undefined);
      await expectSignedOut(b);
    });
  }

  it('answers within about five seconds when the upstream does not answer', async function () {
    this.timeout(15_000);
    const b = browser();
    const page = await b.get('/login').expect(200);
    const started = Date.now();
    const answer = await b.fill(page, '/login/upstream/hangs').expect(424);
    const took = Date.now() - started;
    expect(took).to.be.within(4500, 9000);
    expect(answer.text).to.include('did not answer in time');
  });

  it('answers within about five seconds when the upstream\'s token endpoint does not answer', async function () {
    this.timeout(15_000);
    const p = person();
    const b = browser();
    const answer = await continueWith(b, 'upstream', { stopAtCallback: true });
    upstream.state.tamper = 'hang-token';
    const started = Date.now();
    const page = await b.get(answer.headers.get('location')!).expect(424);
    expect(Date.now() - started).to.be.within(4500, 9000);
    expect(page.text).to.include('did not answer in time');
    expect(await findIdentity(idp.db, providerIds.upstream!, p.sub)).to.equal(undefined);
  });

  it('links a provider from Account settings → Sign-in methods through the whole round trip, then signs in with it', async () => {
    const owner = await makeUser(idp.db);
    const p = person({ email: `other-${unique()}@example.test` });
    const b = browser();
    const login = await b.get('/login').expect(200);
    await b.fill(login, '/login', { 'Username or email': owner.username, Password: owner.password }).expect(302);
    const methods = await b.get('/account/settings/sign-in-methods').expect(200);
    // Just signed in with the password: fresh enough to link without being asked again.
    const moving = await b.fill(methods, '/account/settings/sign-in-methods/link/upstream').expect(200);
    const href = unescapeHtml(/href="([^"]+)" data-testid="upstream-continue"/.exec(moving.text)?.[1] ?? '');
    expect(href.startsWith(`${upstream.url}/auth?`), href).to.equal(true);
    const back = await b.follow(href).expect(200);
    expect(back.url.pathname).to.equal('/account/settings/sign-in-methods');
    expect(back.text).to.include('Linked Upstream upstream.');
    expect((await findIdentity(idp.db, providerIds.upstream!, p.sub))!.user_id).to.equal(owner.id);
    const notice = await smtp.nextWith(owner.email, 'A sign-in method was linked');
    expect(notice.text).to.include('Upstream upstream');
    const audited = await idp.db('audit_events').where({ user_id: owner.id, action: 'user.identity.link' }).select('details');
    expect(audited).to.have.length(1);
    const details: unknown = audited[0]!.details;
    expect(typeof details === 'string' ? JSON.parse(details) : details).to.deep.include({ provider: 'upstream' });

    // The identity now signs in to the account, from a browser that never saw the password.
    const other = browser();
    await continueWith(other, 'upstream');
    expect(await signedInAs(other)).to.equal(owner.username);

    // Someone else linking the same upstream identity is refused: it belongs to the owner's account.
    const intruder = await makeUser(idp.db);
    const c = browser();
    await c.fill(await c.get('/login').expect(200), '/login', { 'Username or email': intruder.username, Password: intruder.password }).expect(302);
    const theirs = await c.get('/account/settings/sign-in-methods').expect(200);
    const started = await c.fill(theirs, '/account/settings/sign-in-methods/link/upstream').expect(200);
    const refused = await c.follow(unescapeHtml(/href="([^"]+)" data-testid="upstream-continue"/.exec(started.text)?.[1] ?? '')).expect(409);
    expect(refused.text).to.include('already linked to another account');
    expect((await findIdentity(idp.db, providerIds.upstream!, p.sub))!.user_id).to.equal(owner.id);
  });

  it('still asks the account\'s own second factor when the provider is not trusted for it', async () => {
    const owner = await makeUser(idp.db);
    const { codes } = await withTwoFactor(idp.db, owner);
    const p = person();
    await insertIdentity(idp.db, { userId: owner.id, providerId: providerIds.upstream!, subject: p.sub, username: p.preferred_username!, email: p.email!, at: now() });
    upstream.state.amr = ['pwd', 'mfa'];
    const b = browser();
    const challenge = await continueWith(b, 'upstream');
    expect(challenge.url.pathname).to.equal('/login/two-factor');
    expect(challenge.text).to.include('data-testid="two-factor-form"');
    await expectSignedOut(b);
    const form = filledForm(challenge.text, '/login/two-factor', { code: codes[0]! });
    await b.postForm(form.action, form.fields).expect(302, '/groups');
    expect(await signedInAs(b)).to.equal(owner.username);
  });

  it('takes the upstream\'s second factor for a trusted provider when its amr says so, and only then', async () => {
    const owner = await makeUser(idp.db);
    await withTwoFactor(idp.db, owner);
    const p = person();
    await insertIdentity(idp.db, { userId: owner.id, providerId: providerIds.trusted!, subject: p.sub, username: p.preferred_username!, email: p.email!, at: now() });

    upstream.state.amr = ['pwd'];
    const asked = await continueWith(browser(), 'trusted');
    expect(asked.url.pathname).to.equal('/login/two-factor');

    upstream.state.amr = ['pwd', 'otp', 'mfa'];
    const b = browser();
    const landed = await continueWith(b, 'trusted');
    expect(landed.url.pathname).to.equal('/groups');
    expect(await signedInAs(b)).to.equal(owner.username);
  });

  it('answers whatever a stranger sends to the callback and the pages after it with a page that says so, never a 5xx', async () => {
    const b = browser();
    const page = await b.get('/login').expect(200);
    const strange = [
      '/login/callback/upstream?code=forged&state=forged',
      '/login/callback/no-such-provider?code=x&state=y',
      '/login/callback/UPPER%00case',
      `/login/callback/upstream?${'a'.repeat(3000)}=1`,
      '/login/callback/upstream?state=a&state=b&code=c&code=d',
      '/login/continue/link',
      '/login/continue/sign-up',
      '/interaction/not-a-flow/upstream',
    ];
    for (const path of strange) {
      const answer = await b.get(path);
      expect(answer.status, path).to.be.within(400, 499);
      expect(answer.text, path).to.not.match(/at \w+ \(|node_modules|Error:/);
    }
    for (const path of ['/login/continue/link', '/login/continue/sign-up']) {
      const answer = await b.submit(path, { password: 'x', code: '1', username: 'x', name: 'y' });
      expect(answer.status, path).to.equal(400);
    }
    // A round trip under way, and an answer with its state twice, a missing code, or a tampered cookie.
    const started = await start(b, page, 'upstream');
    const state = new URL(started).searchParams.get('state')!;
    const doubled = await b.get(`/login/callback/upstream?state=${state}&state=${state}`);
    expect(doubled.status).to.equal(400);
    await start(b, page, 'upstream');
    const jar = b.cookies();
    for (const [name, value] of jar) if (name.startsWith('idp_upstream') && !name.endsWith('.sig')) jar.set(name, `${value.slice(0, -2)}AA`);
    const tampered = await b.get(`/login/callback/upstream?state=${state}&code=x`).expect(400);
    expect(tampered.text).to.include('already finished');
  });

  it('lets a sign-in whose trusted upstream second factor counted into a group that requires two-factor, and not one without', async () => {
    const owner = await makeUser(idp.db);
    const member = await makeUser(idp.db);
    const group = await makeGroup(idp.db, owner.id);
    await addMember(idp.db, await groupAccess(idp.db, owner.id, group.id), { user: member.username, role: 'member' });
    await idp.db('groups').where({ id: group.id }).update({ require_two_factor: true });
    const p = person();
    await insertIdentity(idp.db, { userId: member.id, providerId: providerIds.trusted!, subject: p.sub, username: p.preferred_username!, email: p.email!, at: now() });

    upstream.state.amr = ['pwd'];
    const oneFactor = browser();
    expect((await continueWith(oneFactor, 'trusted')).url.pathname).to.equal('/groups');
    await oneFactor.get(`/groups/${group.path}`).expect(303, `/account/settings/two-factor?return_to=${encodeURIComponent(`/groups/${group.path}`)}`);

    upstream.state.amr = ['pwd', 'hwk', 'mfa'];
    const twoFactors = browser();
    expect((await continueWith(twoFactors, 'trusted')).url.pathname).to.equal('/groups');
    await twoFactors.get(`/groups/${group.path}`).expect(200);
  });

  /** A third-party application's authorization flow through openid-client, up to our sign-in page; `finish` takes a redirect into its callback to the ID token's claims. */
  async function thirdPartyFlow(b: Browser) {
    const app = await makeClient(idp.db, { redirectUri: RP_CALLBACK });
    const config = await client.discovery(new URL(idp.url), app.clientId, app.clientSecret, undefined, { execute: [client.allowInsecureRequests] });
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const nonce = client.randomNonce();
    const authorizeUrl = client.buildAuthorizationUrl(config, {
      redirect_uri: RP_CALLBACK,
      scope: 'openid profile',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    const loginPage = await b.follow(authorizeUrl.href).expect(200);
    expect(loginPage.url.pathname).to.match(/^\/interaction\//);
    return {
      loginPage,
      /** Consents on the consent page and exchanges the code: the ID token's claims. */
      async consentAndExchange(consent: Page) {
        expect(consent.text).to.include('Authorize');
        const confirm = filledForm(consent.text, '/confirm');
        const redirect = await b.follow(await b.postForm(confirm.action, confirm.fields), RP_CALLBACK);
        const callback = new URL(redirect.headers.get('location')!);
        expect(callback.href.startsWith(RP_CALLBACK)).to.equal(true);
        const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce });
        return tokens.claims()!;
      },
    };
  }

  it('signs in upstream in the middle of a third-party app\'s authorization flow, then consent, code and an ID token whose amr has fed', async () => {
    person();
    const b = browser();
    const flow = await thirdPartyFlow(b);
    expect(flow.loginPage.text).to.include('Continue with Upstream upstream');
    const signUp = await continueWith(b, 'upstream', { from: flow.loginPage });
    expect(signUp.url.pathname).to.equal('/login/continue/sign-up');
    const username = `flow-${unique()}`;
    const form = filledForm(signUp.text, '/login/continue/sign-up', { username });
    // The sign-up hands the sign-in back to the flow, which goes on to the consent page.
    const consent = await b.follow(await b.postForm(form.action, form.fields).expect(302)).expect(200);
    const claims = await flow.consentAndExchange(consent);
    expect(claims.amr).to.deep.equal(['fed']);
    expect(claims.sub).to.equal(String((await findUserByUsername(idp.db, username))!.id));
  });

  it('keeps the flow through the account\'s second factor after an upstream sign-in: amr fed and mfa', async () => {
    const owner = await makeUser(idp.db);
    const { codes } = await withTwoFactor(idp.db, owner);
    const p = person();
    await insertIdentity(idp.db, { userId: owner.id, providerId: providerIds.upstream!, subject: p.sub, username: p.preferred_username!, email: p.email!, at: now() });
    const b = browser();
    const flow = await thirdPartyFlow(b);
    const challenge = await continueWith(b, 'upstream', { from: flow.loginPage });
    expect(challenge.url.pathname).to.match(/^\/interaction\/[^/]+\/two-factor$/);
    const form = filledForm(challenge.text, '/two-factor', { code: codes[0]! });
    const consent = await b.follow(await b.postForm(new URL(form.action, challenge.url), form.fields).expect(303)).expect(200);
    const claims = await flow.consentAndExchange(consent);
    expect(claims.amr).to.deep.equal(['fed', 'mfa']);
    expect(claims.sub).to.equal(String(owner.id));
  });

  it('counts each result in the metrics, by provider', async () => {
    const count = async (result: string) => {
      const metrics = await (await fetch(idp.metricsUrl!)).text();
      return Number(new RegExp(`idp_upstream_sign_ins_total\\{provider="corp",result="${result}"\\} (\\d+)`).exec(metrics)?.[1] ?? 0);
    };
    const [denied, signUp] = [await count('denied'), await count('sign_up')];
    upstream.state.deny = true;
    await continueWith(browser(), 'corp');
    upstream.state.deny = false;
    person({ email: `metrics-${unique()}@corp.example.test` });
    await continueWith(browser(), 'corp');
    expect(await count('denied')).to.equal(denied + 1);
    expect(await count('sign_up')).to.equal(signUp + 1);
  });

  it('counts failures in the sign-in limits: an address that keeps failing may not start again for a while', async () => {
    upstream.state.deny = true;
    const b = browser();
    let page = await b.get('/login').expect(200);
    for (let i = 0; i < 5; i += 1) {
      page = await b.follow(await start(b, page, 'upstream')).expect(403);
    }
    const refused = await b.fill(page, '/login/upstream/upstream').expect(429);
    expect(refused.headers.get('retry-after')).to.match(/^\d+$/);
    expect(refused.text).to.include('Too many failed sign-in attempts');
    // Another address is not held back.
    upstream.state.deny = false;
    person();
    expect((await continueWith(browser(), 'upstream')).url.pathname).to.equal('/login/continue/sign-up');
  });
});

describeEachProfile('Sign-in without passwords (PASSWORD_SIGN_IN=false)', (profile) => {
  const idp = useIdp(profile, { PASSWORD_SIGN_IN: 'false' });

  it('hides the password form and Forgot password?, and refuses a password posted anyway', async () => {
    const user = await makeUser(idp.db);
    const b = new Browser(idp.url);
    const page = await b.get('/login').expect(200);
    expect(page.text).to.not.include('name="password"');
    expect(page.text).to.not.include('Forgot password?');
    const refused = await b.submit('/login', { login: user.username, password: user.password }).expect(403);
    expect(refused.text).to.include('Signing in with a password is turned off');
    await b.get('/groups').expect(302, /^\/login/);
  });
});
