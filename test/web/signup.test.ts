import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { Browser, type Page } from '../helpers/browser.js';
import { makeUser } from '../helpers/factories.js';
import { errorMessage, fieldError, filled, formOf } from '../helpers/html.js';
import { linkIn, useMailServer } from '../helpers/smtp.js';

const unique = () => randomBytes(4).toString('hex');
const PASSWORD = 'a sign-up passphrase';

/**
 * Sign-up never tells whether an address already has an account: a sign-up is answered "check
 * your inbox" whatever the address, makes no account until the mailed link is followed (so no
 * sign-in can tell either), and an address that has an account gets word to its owner instead of
 * a link. Every form here is filled from the page's own HTML.
 */
describeEachProfile('sign-up by mailed link', (profile) => {
  const smtp = useMailServer();
  const idp = useIdp(profile, () => ({ SMTP_URL: smtp.url, RATE_LIMIT_SIGNUP_IP: 'off' }));

  /** A new browser (from `from`, a loopback address) that opens /signup and submits its form with `typed`. */
  async function signUp(typed: Record<string, string>, from?: string): Promise<{ browser: Browser; answer: Page }> {
    const browser = new Browser(idp.url, { from });
    const page = await browser.get('/signup').expect(200);
    const form = formOf(page.text, '/signup');
    return { browser, answer: await browser.postForm(form.action, filled(form, typed)) };
  }

  /** The page as the person reads it: without the CSRF token, which differs per browser. */
  const readable = (html: string) => html.replace(/name="_csrf" value="[^"]*"/g, 'name="_csrf"');

  async function canSignIn(login: string, password: string): Promise<boolean> {
    const browser = new Browser(idp.url);
    const page = await browser.get('/login').expect(200);
    const form = formOf(page.text, '/login');
    return (await browser.postForm(form.action, filled(form, { login, password }))).status === 302;
  }

  /** Follows a sign-up link in `browser` and submits its page's form with `typed`. */
  async function finish(browser: Browser, link: URL, typed: Record<string, string>): Promise<Page> {
    const page = await browser.get(link).expect(200);
    const form = formOf(page.text, '/signup/confirm');
    return browser.postForm(form.action, filled(form, typed));
  }

  it('says nothing of mail files on the Check your inbox page when a mail server is set', async () => {
    const username = `smtp-${unique()}`;
    const { browser, answer } = await signUp({ username, email: `${username}@example.test`, name: 'Mailed', password: PASSWORD });
    const sent = await browser.follow(answer).expect(200);
    expect(sent.text).to.include('Check your inbox').and.not.to.include('data-testid="mail-to-files"');
  });

  it('answers an address that has an account exactly as a free one, mails its owner instead, and no sign-in works with what was typed', async () => {
    const owner = await makeUser(idp.db);
    const free = `free-${unique()}@example.test`;
    const tries = {
      taken: { username: `taken-${unique()}`, email: owner.email.toUpperCase(), name: 'Mallory', password: PASSWORD },
      free: { username: `free-${unique()}`, email: free, name: 'Mallory', password: PASSWORD },
    };
    const taken = await signUp(tries.taken);
    const fresh = await signUp(tries.free);

    expect(taken.answer.status).to.equal(302);
    expect(fresh.answer.status).to.equal(taken.answer.status);
    expect(taken.answer.headers.get('location')).to.equal('/signup/sent');
    expect(fresh.answer.headers.get('location')).to.equal(taken.answer.headers.get('location'));
    expect(fresh.answer.text).to.equal(taken.answer.text);
    const takenPage = await taken.browser.follow(taken.answer).expect(200);
    const freePage = await fresh.browser.follow(fresh.answer).expect(200);
    expect(takenPage.text).to.include('Check your inbox').and.include(tries.taken.email);
    // The same page, but for the address each typed.
    expect(readable(takenPage.text).replace(tries.taken.email, 'ADDRESS')).to.equal(readable(freePage.text).replace(free, 'ADDRESS'));

    const toOwner = await smtp.next(owner.email);
    expect(toOwner.subject).to.equal('Someone tried to create an account with your address');
    expect(toOwner.text).to.include(owner.username).and.include('nothing was created or changed').and.include(`${idp.url}/forgot-password`);
    expect(toOwner.text).not.to.include('/signup/confirm');
    expect((await smtp.next(free)).subject).to.equal('Finish creating your account');

    // Nothing exists to sign in to, whichever address was used, by either name.
    for (const attempt of [tries.taken, tries.free]) {
      expect(await canSignIn(attempt.username, PASSWORD), attempt.username).to.equal(false);
    }
    expect(await canSignIn(free, PASSWORD)).to.equal(false);
    expect(await canSignIn(owner.email, PASSWORD)).to.equal(false);
    expect(await idp.db('users').whereIn('username_key', [tries.taken.username, tries.free.username]).first('id')).to.equal(undefined);
  });

  it('makes the account when the mailed link is followed with the password chosen: signed in, the address verified, the link spent', async () => {
    const username = `new-${unique()}`;
    const email = `${username}@example.test`;
    const { browser } = await signUp({ username, email, name: 'New Person', password: PASSWORD });
    const mail = await smtp.next(email);
    expect(mail.text).to.include('expires in 24 hours');
    const link = linkIn(mail, idp.url);
    expect(link.pathname).to.equal('/signup/confirm');
    expect(JSON.stringify(await idp.db('pending_signups').select())).not.to.include(link.searchParams.get('token')!).and.not.to.include(PASSWORD);

    const wrong = await finish(browser, link, { password: 'not what I chose' });
    expect(wrong.status).to.equal(400);
    expect(fieldError(wrong.text, 'password')).to.equal('That is not the password you chose when you signed up.');
    const done = await finish(browser, link, { password: PASSWORD });
    expect(done.status).to.equal(302);
    expect(done.headers.get('location')).to.equal('/groups');
    const groups = await browser.get('/groups').expect(200);
    expect(groups.text).to.include(`title="Signed in as ${username}"`).and.not.include('data-testid="verify-banner"');
    const row = await idp.db('users').where({ username_key: username }).first('email', 'name', 'email_verified_at');
    expect(row.email).to.equal(email);
    expect(row.name).to.equal('New Person');
    expect(row.email_verified_at).to.not.equal(null);
    expect(await canSignIn(email, PASSWORD)).to.equal(true);

    const again = await new Browser(idp.url).get(link).expect(410);
    expect(errorMessage(again.text)).to.include('already used');
  });

  it('asks for the password chosen at sign-up, counts wrong ones, and spends the link after five', async () => {
    const username = `guess-${unique()}`;
    const email = `${username}@example.test`;
    await signUp({ username, email, name: '', password: PASSWORD });
    const link = linkIn(await smtp.next(email), idp.url);
    const browser = new Browser(idp.url);
    const empty = await finish(browser, link, { password: '' });
    expect(empty.status).to.equal(400);
    expect(fieldError(empty.text, 'password')).to.include('Enter the password you chose');
    // Six guesses sent at once: each takes one of the link's five attempts before it is checked.
    const page = await browser.get(link).expect(200);
    const form = formOf(page.text, '/signup/confirm');
    const guesses = await Promise.all(Array.from({ length: 6 }, (_, i) => browser.postForm(form.action, filled(form, { password: `wrong guess number ${i}` }))));
    for (const guess of guesses) expect([400, 410]).to.include(guess.status);
    expect(guesses.filter((g) => g.status === 410)).to.have.length.at.least(1);
    expect(Number((await idp.db('pending_signups').where({ email }).first('attempts')).attempts)).to.equal(5);
    // The right password is refused now too: the link is spent.
    const right = await browser.postForm(form.action, filled(form, { password: PASSWORD }));
    expect(right.status).to.equal(410);
    expect(errorMessage(right.text)).to.include('Too many wrong passwords');
    expect(await idp.db('users').where({ username_key: username }).first('id')).to.equal(undefined);
  });

  it('asks for another username on the link page when an account took it meanwhile', async () => {
    const username = `race-${unique()}`;
    const email = `${username}@example.test`;
    await signUp({ username, email, name: '', password: PASSWORD });
    const link = linkIn(await smtp.next(email), idp.url);
    await makeUser(idp.db, { username, email: `someone-else-${unique()}@example.test` });
    const browser = new Browser(idp.url);
    const refused = await finish(browser, link, { password: PASSWORD });
    expect(refused.status).to.equal(409);
    expect(fieldError(refused.text, 'username')).to.include('taken meanwhile');
    const form = formOf(refused.text, '/signup/confirm');
    const made = await browser.postForm(form.action, filled(form, { username: `${username}-2`, password: PASSWORD }));
    expect(made.status).to.equal(302);
    expect(await canSignIn(`${username}-2`, PASSWORD)).to.equal(true);
  });

  it('says when a username is taken: usernames are public', async () => {
    const existing = await makeUser(idp.db);
    const { answer } = await signUp({ username: existing.username.toUpperCase(), email: `other-${unique()}@example.test`, name: '', password: PASSWORD });
    expect(answer.status).to.equal(409);
    expect(fieldError(answer.text, 'username')).to.include('already taken');
    expect(fieldError(answer.text, 'email')).to.equal(undefined);
  });

  it('a link whose address got an account meanwhile makes nothing and says so', async () => {
    const username = `late-${unique()}`;
    const email = `${username}@example.test`;
    await signUp({ username, email, name: '', password: PASSWORD });
    const link = linkIn(await smtp.next(email), idp.url);
    await makeUser(idp.db, { email });
    const refused = await finish(new Browser(idp.url), link, { password: PASSWORD });
    expect(refused.status).to.equal(409);
    expect(errorMessage(refused.text)).to.include(`An account already uses ${email}`);
    expect(await idp.db('users').where({ username_key: username }).first('id')).to.equal(undefined);
  });

  it('refuses an unknown or malformed link with a clear page', async () => {
    const browser = new Browser(idp.url);
    for (const path of ['/signup/confirm', '/signup/confirm?token=nope', `/signup/confirm?token=${'A'.repeat(43)}`, '/signup/confirm?token=a&token=b']) {
      const res = await browser.get(path).expect(400);
      expect(errorMessage(res.text)).to.include('not valid');
      expect(res.text).to.include('Sign up again');
    }
    await browser.get('/signup').expect(200);
    const posted = await browser.submit('/signup/confirm', { token: 'nope', username: 'someone', password: PASSWORD });
    expect(posted.status).to.equal(400);
  });
});

describeEachProfile('sign-up: mails to one address are limited, whether or not it has an account', (profile) => {
  const smtp = useMailServer();
  const idp = useIdp(profile, () => ({ SMTP_URL: smtp.url, RATE_LIMIT_SIGNUP_IP: 'off', RATE_LIMIT_VERIFY_ADDRESS: '2/1h' }));

  it('refuses the third sign-up with one address within the hour, the same way for a taken and a free one', async () => {
    const owner = await makeUser(idp.db);
    const free = `free-${unique()}@example.test`;
    const answers: Array<{ status: number; error: string | undefined }> = [];
    for (const email of [owner.email, free]) {
      for (let i = 0; i < 3; i += 1) {
        const browser = new Browser(idp.url);
        const page = await browser.get('/signup').expect(200);
        const form = formOf(page.text, '/signup');
        const answer = await browser.postForm(form.action, filled(form, { username: `u${i}-${unique()}`, email, password: PASSWORD }));
        if (i < 2) expect(answer.status).to.equal(302);
        else answers.push({ status: answer.status, error: fieldError(answer.text, 'email') });
      }
    }
    expect(answers[0]).to.deep.equal(answers[1]);
    expect(answers[0]!.status).to.equal(429);
    expect(answers[0]!.error).to.include('Too many e-mails');
    await smtp.next(owner.email);
    await smtp.next(owner.email);
    await smtp.next(free);
    await smtp.next(free);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(smtp.countTo(owner.email)).to.equal(2);
    expect(smtp.countTo(free)).to.equal(2);
  });
});

describeEachProfile('sign-up: refused sign-ups count against the limit', (profile) => {
  const smtp = useMailServer();
  const idp = useIdp(profile, () => ({ SMTP_URL: smtp.url, RATE_LIMIT_SIGNUP_IP: '3/1h' }));

  it('counts a bad field, a taken username and a taken address like any other sign-up', async () => {
    const owner = await makeUser(idp.db);
    const attempt = async (typed: Record<string, string>) => {
      const browser = new Browser(idp.url, { from: '127.0.0.7' });
      const page = await browser.get('/signup').expect(200);
      const form = formOf(page.text, '/signup');
      return browser.postForm(form.action, filled(form, typed));
    };
    expect((await attempt({ username: `bad-${unique()}`, email: 'not an address', password: PASSWORD })).status).to.equal(400);
    expect((await attempt({ username: owner.username, email: `x-${unique()}@example.test`, password: PASSWORD })).status).to.equal(409);
    expect((await attempt({ username: `y-${unique()}`, email: owner.email, password: PASSWORD })).status).to.equal(302);
    const refused = await attempt({ username: `z-${unique()}`, email: `z-${unique()}@example.test`, password: PASSWORD });
    expect(refused.status).to.equal(429);
    expect(Number(refused.headers.get('retry-after'))).to.be.greaterThan(0);
    expect(fieldError(refused.text, 'username')).to.include('Too many accounts were created from your network');
  });
});

describeEachProfile('sign-up on a server with no mail server', (profile) => {
  const idp = useIdp(profile, () => ({ RATE_LIMIT_SIGNUP_IP: 'off' }));

  it('says on the Check your inbox page where the mail went: a file under MAIL_DIR and a line in the log', async () => {
    const browser = new Browser(idp.url);
    const page = await browser.get('/signup').expect(200);
    const form = formOf(page.text, '/signup');
    const username = `files-${unique()}`;
    const sent = await browser.follow(await browser.postForm(form.action, filled(form, { username, email: `${username}@example.test`, name: 'Files', password: PASSWORD })).expect(302)).expect(200);
    expect(sent.text).to.include('data-testid="mail-to-files"').and.to.include('MAIL_DIR');
  });
});
