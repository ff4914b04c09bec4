import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { expect } from 'chai';
import { simpleParser } from 'mailparser';
import { pino } from 'pino';
import { createIdp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { createMailer, type Mailer } from '../../src/services/mail.js';
import { sendVerification } from '../../src/services/verification.js';
import { describeEachProfile, listen, useIdp } from '../helpers/app.js';
import { signIn, visit } from '../helpers/browser.js';
import { freshDatabase } from '../helpers/db.js';
import { makeUser, PASSWORD } from '../helpers/factories.js';
import { csrfFrom, errorMessage, fieldError } from '../helpers/html.js';
import { linkIn, startMailServer, useMailServer } from '../helpers/smtp.js';

const unique = () => randomBytes(4).toString('hex');
const NEW_PASSWORD = 'a brand new passphrase';

/** The path and query of a link, as the site's pages are requested. */
const pathOf = (link: URL) => `${link.pathname}${link.search}`;

describeEachProfile('mail: e-mail verification and password reset through SMTP', (profile) => {
  const smtp = useMailServer();
  // Every test here asks from one address: its own limit is tested on a server of its own below.
  const idp = useIdp(profile, () => ({ SMTP_URL: smtp.url, MAIL_FROM: 'Horizon ID <id@example.test>', RATE_LIMIT_RESET_IP: 'off' }));
  let mailer: Mailer;
  before(() => {
    mailer = createMailer({ ...idp.config.mail, logLinks: false, logger: createLogger('silent') });
  });
  after(() => {
    mailer?.close();
  });

  const verifiedAt = async (id: number) => ((await idp.db('users').where({ id }).first('email_verified_at')) as { email_verified_at: unknown }).email_verified_at;

  describe('verify e-mail', () => {
    it('Resend mails an unverified account a 24-hour link; following it verifies the address, once', async () => {
      const user = await makeUser(idp.db, { verified: false });
      const client = await signIn(idp.url, user);
      const before = await client.get('/groups').expect(200);
      expect(before.text).to.include('data-testid="verify-banner"');
      expect(before.text).to.include('action="/verify-email/resend"');
      await client.submit('/verify-email/resend').expect(302, '/verify-email/sent');

      const mail = await smtp.next(user.email);
      expect(mail.subject).to.equal('Verify your e-mail address');
      expect(mail.from?.text).to.include('id@example.test');
      const link = linkIn(mail, idp.url);
      expect(link.pathname).to.equal('/verify-email');
      expect(link.searchParams.get('token')).to.match(/^[A-Za-z0-9_-]{43}$/);
      expect(mail.html).to.include(link.toString().replace(/&/g, '&amp;'));
      expect(mail.text).to.include('expires in 24 hours');
      expect(mail.html).to.include('<a rel="noreferrer" href="');

      await client.get(pathOf(link)).expect(302, '/verify-email/done');
      const done = await client.get('/verify-email/done').expect(200);
      expect(done.text).to.include('your e-mail address is verified');
      expect(done.text).not.to.include('data-testid="verify-banner"');
      expect(await verifiedAt(user.id)).to.not.equal(null);

      const again = await client.get(pathOf(link)).expect(410);
      expect(errorMessage(again.text)).to.include('already used');
    });

    it('stores only a digest of the token', async () => {
      const user = await makeUser(idp.db);
      await sendVerification(mailDeps(), user);
      const token = linkIn(await smtp.next(user.email), idp.url).searchParams.get('token')!;
      const rows = (await idp.db('account_links').where({ user_id: user.id })) as Array<Record<string, unknown>>;
      expect(rows).to.have.length(1);
      expect(JSON.stringify(rows)).not.to.include(token);
      expect(rows[0]).to.include({ purpose: 'verify-email', email: user.email });
    });

    it('Resend sends another link, within a limit per account', async () => {
      const user = await makeUser(idp.db, { verified: false });
      const client = await signIn(idp.url, user);
      await client.submit('/verify-email/resend').expect(302, '/verify-email/sent');
      const sent = await client.get('/verify-email/sent').expect(200);
      expect(sent.text).to.include(user.email);
      await client.get(pathOf(linkIn(await smtp.next(user.email), idp.url))).expect(302);
      expect(await verifiedAt(user.id)).to.not.equal(null);
    });

    it('refuses a sixth Resend within the hour with 429 and Retry-After', async () => {
      const user = await makeUser(idp.db, { verified: false });
      const client = await signIn(idp.url, user);
      for (let i = 0; i < 5; i += 1) await client.submit('/verify-email/resend').expect(302);
      const refused = await client.submit('/verify-email/resend').expect(429);
      expect(Number(refused.headers.get('retry-after'))).to.be.greaterThan(0);
      expect(errorMessage(refused.text)).to.include('Too many e-mails');
      expect(smtp.countTo(user.email)).to.equal(5);
    });

    it('Resend needs a signed-in user and a CSRF token', async () => {
      const anonymous = await visit(idp.url);
      await anonymous.submit('/verify-email/resend').expect(302, /^\/login\?return_to=/);
      const user = await makeUser(idp.db);
      const client = await signIn(idp.url, user);
      await client.postForm('/verify-email/resend', { _csrf: 'forged' }).expect(403);
    });

    it('verifies nothing when the account changed its address after the link was sent', async () => {
      const user = await makeUser(idp.db, { verified: false });
      await sendVerification(mailDeps(), user);
      const link = linkIn(await smtp.next(user.email), idp.url);
      const changed = `changed-${unique()}@example.test`;
      await idp.db('users').where({ id: user.id }).update({ email: changed, email_key: changed });
      const res = await (await visit(idp.url)).get(pathOf(link)).expect(409);
      expect(errorMessage(res.text)).to.include('no longer uses');
      expect(await verifiedAt(user.id)).to.equal(null);
    });

    it('refuses an unknown or expired link with a clear page and a way forward', async () => {
      const anonymous = await visit(idp.url);
      for (const path of ['/verify-email', '/verify-email?token=nope', `/verify-email?token=${'A'.repeat(43)}`, '/verify-email?token=a&token=b']) {
        const res = await anonymous.get(path).expect(400);
        expect(errorMessage(res.text)).to.include('not valid');
        expect(res.text).to.include('Sign in</a> to ask for a new link');
      }
      const user = await makeUser(idp.db, { verified: false });
      await sendVerification(mailDeps(), user);
      const link = linkIn(await smtp.next(user.email), idp.url);
      await idp.db('account_links').where({ user_id: user.id }).update({ expires_at: new Date(Date.now() - 1000).toISOString() });
      const client = await signIn(idp.url, user);
      const expired = await client.get(pathOf(link)).expect(410);
      expect(errorMessage(expired.text)).to.include('expired');
      expect(expired.text).to.include('Send a new link');
      expect(await verifiedAt(user.id)).to.equal(null);
    });
  });

  describe('forgot password', () => {
    it('is linked from the sign-in page', async () => {
      const res = await (await visit(idp.url)).get('/login').expect(200);
      expect(res.text).to.include('href="/forgot-password"');
    });

    it('mails a 1-hour link; the new password replaces the old one, every session is signed out and the link is spent', async () => {
      const user = await makeUser(idp.db);
      const elsewhere = await signIn(idp.url, user);
      await elsewhere.get('/groups').expect(200);
      const client = await visit(idp.url, '/forgot-password');
      await client.submit('/forgot-password', { email: user.email.toUpperCase() }).expect(302, '/forgot-password/sent');
      const sent = await client.get('/forgot-password/sent').expect(200);
      expect(sent.text).to.include('If an account uses that address');

      const mail = await smtp.next(user.email);
      expect(mail.subject).to.equal('Reset your password');
      expect(mail.text).to.include('expires in 1 hour');
      expect(mail.html).to.include('<meta name="referrer" content="no-referrer">');
      expect(mail.html).to.include('<a rel="noreferrer" href="');
      const link = linkIn(mail, idp.url);
      expect(link.pathname).to.equal('/reset-password');
      const token = link.searchParams.get('token')!;

      const page = await client.get(pathOf(link)).expect(200);
      expect(page.headers.get('referrer-policy')).to.equal('no-referrer');
      expect(page.headers.get('cache-control')).to.equal('no-store');
      expect(page.text).to.include('name="password_confirmation"');
      const csrf = csrfFrom(page.text);

      await client.postForm('/reset-password', { _csrf: csrf, token, password: NEW_PASSWORD, password_confirmation: NEW_PASSWORD }).expect(302, '/reset-password/done');
      const donePage = await client.get('/reset-password/done').expect(200);
      expect(donePage.text).to.include('Your new password is set');
      expect(donePage.text).not.to.include(token);

      await elsewhere.get('/groups').expect(302, /^\/login\?return_to=/);
      const login = await visit(idp.url);
      await login.submit('/login', { login: user.username, password: PASSWORD }).expect(401);
      await login.submit('/login', { login: user.username, password: NEW_PASSWORD }).expect(302, '/groups');

      const reused = await client.get(pathOf(link)).expect(410);
      expect(errorMessage(reused.text)).to.include('already used');
      expect(reused.text).to.include('href="/forgot-password"');
      const reposted = await client
        .postForm('/reset-password', { _csrf: csrf, token, password: 'yet another passphrase', password_confirmation: 'yet another passphrase' })
        .expect(410);
      expect(reposted.text).to.include('Request a new link');
    });

    it('answers an unknown address with the same page and sends nothing', async () => {
      const unknown = `nobody-${unique()}@example.test`;
      const known = await makeUser(idp.db);
      const client = await visit(idp.url, '/forgot-password');
      const forUnknown = await client.submit('/forgot-password', { email: unknown }).expect(302);
      const forKnown = await client.submit('/forgot-password', { email: known.email }).expect(302);
      expect(forUnknown.headers.get('location')).to.equal(forKnown.headers.get('location'));
      expect(forUnknown.text).to.equal(forKnown.text);
      await smtp.next(known.email);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(smtp.countTo(unknown)).to.equal(0);
    });

    it('words the new password’s errors as sentences in the labels’ words', async () => {
      const user = await makeUser(idp.db);
      const client = await visit(idp.url, '/forgot-password');
      await client.submit('/forgot-password', { email: user.email }).expect(302);
      const page = await client.get(linkIn(await smtp.next(user.email), idp.url)).expect(200);
      const mismatch = await client.fill(page, '/reset-password', { 'New password': NEW_PASSWORD, 'New password again': 'something else' }).expect(400);
      expect(fieldError(mismatch.text, 'password_confirmation')).to.equal('The two passwords do not match');
      const short = await client.fill(page, '/reset-password', { 'New password': 'short', 'New password again': 'short' }).expect(400);
      expect(fieldError(short.text, 'password')).to.equal('New password must be at least 8 characters');
    });

    it('shows field errors for a malformed address and for a new password that breaks the rules', async () => {
      const client = await visit(idp.url, '/forgot-password');
      const malformed = await client.submit('/forgot-password', { email: 'not an address' }).expect(400);
      expect(fieldError(malformed.text, 'email')).to.include('valid email');

      const user = await makeUser(idp.db);
      await client.submit('/forgot-password', { email: user.email }).expect(302);
      const token = linkIn(await smtp.next(user.email), idp.url).searchParams.get('token')!;
      const cases: Array<[Record<string, string>, string, string]> = [
        [{ password: NEW_PASSWORD, password_confirmation: 'something else' }, 'password_confirmation', 'do not match'],
        [{ password: 'short', password_confirmation: 'short' }, 'password', 'at least 8'],
        [{ password: 'password123', password_confirmation: 'password123' }, 'password', 'most common'],
        [{ password: user.username, password_confirmation: user.username }, 'password', 'username or email'],
        [{ password: 'x'.repeat(300), password_confirmation: 'x'.repeat(300) }, 'password', 'at most 256'],
        [{}, 'password', 'at least 8'],
      ];
      for (const [fields, field, message] of cases) {
        const res = await client.submit('/reset-password', { token, ...fields }).expect(400);
        expect(fieldError(res.text, field), `${field} of ${JSON.stringify(fields).slice(0, 60)}`).to.include(message);
        expect(res.text).to.include(`name="token" value="${token}"`);
      }
      // None of those spent the link.
      await client.submit('/reset-password', { token, password: NEW_PASSWORD, password_confirmation: NEW_PASSWORD }).expect(302);
    });

    it('refuses an expired or unknown link with a clear page offering a new one', async () => {
      const user = await makeUser(idp.db);
      const client = await visit(idp.url, '/forgot-password');
      await client.submit('/forgot-password', { email: user.email }).expect(302);
      const link = linkIn(await smtp.next(user.email), idp.url);
      await idp.db('account_links').where({ user_id: user.id }).update({ expires_at: new Date(Date.now() - 1000).toISOString() });
      const expired = await client.get(pathOf(link)).expect(410);
      expect(errorMessage(expired.text)).to.include('expired');
      expect(expired.text).to.include('Request a new link');
      await client.submit('/reset-password', { token: link.searchParams.get('token')!, password: NEW_PASSWORD, password_confirmation: NEW_PASSWORD }).expect(410);

      const unknown = await client.get('/reset-password?token=whatever').expect(400);
      expect(errorMessage(unknown.text)).to.include('not valid');
      await client.submit('/reset-password', { password: NEW_PASSWORD, password_confirmation: NEW_PASSWORD }).expect(400);
      await client.postForm('/reset-password', { token: link.searchParams.get('token')!, password: NEW_PASSWORD }).expect(403);

      const login = await visit(idp.url);
      await login.submit('/login', { login: user.username, password: PASSWORD }).expect(302);
    });

    it('a newer link retires none, but a reset retires every other reset link of the account', async () => {
      const user = await makeUser(idp.db);
      const client = await visit(idp.url, '/forgot-password');
      await client.submit('/forgot-password', { email: user.email }).expect(302);
      const first = linkIn(await smtp.next(user.email), idp.url);
      await client.submit('/forgot-password', { email: user.email }).expect(302);
      const second = linkIn(await smtp.next(user.email), idp.url);
      await client.get(pathOf(first)).expect(200);
      await client.submit('/reset-password', { token: second.searchParams.get('token')!, password: NEW_PASSWORD, password_confirmation: NEW_PASSWORD }).expect(302);
      await client.get(pathOf(first)).expect(410);
    });

    it('sixteen parallel uses of one link: one sets the password, the rest are refused', async function () {
      this.timeout(90_000);
      const user = await makeUser(idp.db);
      const client = await visit(idp.url, '/forgot-password');
      await client.submit('/forgot-password', { email: user.email }).expect(302);
      const token = linkIn(await smtp.next(user.email), idp.url).searchParams.get('token')!;
      const passwords = Array.from({ length: 16 }, (_, i) => `parallel passphrase ${i}`);
      const results = await Promise.all(passwords.map((password) => client.submit('/reset-password', { token, password, password_confirmation: password })));
      const statuses = results.map((r) => r.status);
      expect(statuses.filter((s) => s === 302)).to.have.length(1);
      expect(statuses.filter((s) => s === 410)).to.have.length(15);
      const winner = passwords[statuses.indexOf(302)]!;
      const login = await visit(idp.url);
      await login.submit('/login', { login: user.username, password: winner }).expect(302);
    });
  });

  describe('limits', () => {
    it('refuses a fourth request for one address within the hour, known or not, the same way', async () => {
      const known = await makeUser(idp.db);
      const unknown = `nobody-${unique()}@example.test`;
      const client = await visit(idp.url, '/forgot-password');
      const answers: Array<{ status: number; retry: string | null }> = [];
      for (const email of [known.email, unknown]) {
        for (let i = 0; i < 3; i += 1) await client.submit('/forgot-password', { email }).expect(302);
        const refused = await client.submit('/forgot-password', { email }).expect(429);
        expect(fieldError(refused.text, 'email')).to.include('Too many e-mails');
        answers.push({ status: refused.status, retry: refused.headers.get('retry-after') });
      }
      expect(answers[0]).to.deep.equal(answers[1]);
      for (let i = 0; i < 3; i += 1) await smtp.next(known.email);
      expect(smtp.countTo(known.email)).to.equal(3);
    });
  });

  /** What the Profile page hands sendVerification when a person changes their address. */
  function mailDeps() {
    return { db: idp.db, config: idp.config, log: createLogger('silent'), mailer };
  }
});

describeEachProfile('mail: the per-client-address limit of password-reset requests', (profile) => {
  const smtp = useMailServer();
  const idp = useIdp(profile, () => ({ SMTP_URL: smtp.url, RATE_LIMIT_RESET_IP: '2/1h' }));

  it('refuses a client address past its limit, whatever addresses it asks about', async () => {
    const client = await visit(idp.url, '/forgot-password');
    for (let i = 0; i < 2; i += 1) await client.submit('/forgot-password', { email: `someone-${unique()}@example.test` }).expect(302);
    const refused = await client.submit('/forgot-password', { email: `someone-${unique()}@example.test` }).expect(429);
    expect(Number(refused.headers.get('retry-after'))).to.be.within(1, 3600);
    expect(fieldError(refused.text, 'email')).to.include('Too many e-mails');
  });
});

describeEachProfile('mail: .eml files when SMTP_URL is unset', (profile) => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'idp-mail-'));
  });
  after(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  const idp = useIdp(profile, () => ({ MAIL_DIR: dir }));

  it('writes the sign-up mail as an .eml file whose link opens the page that finishes the sign-up', async () => {
    const client = await visit(idp.url, '/signup');
    const username = `eml-${unique()}`;
    await client.submit('/signup', { username, email: `${username}@example.test`, name: '', password: PASSWORD }).expect(302);
    const { file, mail } = await firstMailIn(dir, idp.url);
    expect(file).to.match(/\.eml$/);
    expect(mail.subject).to.equal('Finish creating your account');
    expect(mail.to && !Array.isArray(mail.to) ? mail.to.text : '').to.equal(`${username}@example.test`);
    const page = await client.get(pathOf(linkIn(mail, idp.url))).expect(200);
    expect(page.text).to.include('Finish creating your account').and.include(`${username}@example.test`);
  });
});

describe('mail: reset tokens never reach the log', () => {
  it('logs no token at trace level through forgot password, the link, a refused form and the reset (SMTP set)', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const smtp = await startMailServer();
    const database = await freshDatabase('sqlite');
    const { server, url, close } = await listen();
    const config = loadConfig({ NODE_ENV: 'test', PORT: new URL(url).port, ISSUER: url, DATABASE_URL: database.url, SMTP_URL: smtp.url });
    // A bare logger with no redaction: the token must never be handed to it at all.
    const idp = await createIdp(config, { logger: pino({ level: 'trace' }, sink) });
    server.on('request', idp.app.callback());
    try {
      const user = await makeUser(idp.db);
      const client = await visit(config.issuer, '/forgot-password');
      await client.submit('/forgot-password', { email: user.email }).expect(302);
      const link = linkIn(await smtp.next(user.email), config.issuer);
      const token = link.searchParams.get('token')!;
      await client.get(pathOf(link)).expect(200);
      await client.submit('/reset-password', { token, password: NEW_PASSWORD, password_confirmation: 'different' }).expect(400);
      await client.submit('/reset-password', { token, password: NEW_PASSWORD, password_confirmation: NEW_PASSWORD }).expect(302);
      await client.get(pathOf(link)).expect(410);
      expect(lines.some((line) => line.includes('"path":"/reset-password"'))).to.equal(true);
      expect(lines.filter((line) => line.includes(token))).to.deep.equal([]);
    } finally {
      await close();
      await idp.close();
      await database.drop();
      await smtp.close();
    }
  });
});

/** The first message written to `dir`, once it is complete (mail is written in the background). */
async function firstMailIn(dir: string, base: string) {
  for (let i = 0; i < 100; i += 1) {
    const [file] = readdirSync(dir);
    const mail = file ? await simpleParser(readFileSync(join(dir, file))) : undefined;
    if (file && mail?.text?.includes(base)) return { file, mail };
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`no complete message in ${dir}`);
}
