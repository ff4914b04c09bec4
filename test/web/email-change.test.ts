import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { Browser, signIn, type Page } from '../helpers/browser.js';
import { makeUser, type TestUser } from '../helpers/factories.js';
import { errorMessage, fieldError, filled, formOf } from '../helpers/html.js';
import { linkIn, useMailServer } from '../helpers/smtp.js';

const unique = () => randomBytes(4).toString('hex');
const FIREFOX = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:128.0) Gecko/20100101 Firefox/128.0';
const PROFILE = '/account/settings/profile';

/**
 * Account settings → Profile, a new e-mail address: the password is checked first, a taken
 * address is answered like a free one, the account keeps its address until the new one is proven
 * by its link, and every mail counts against the limits. Forms are filled from the page's HTML.
 */
describeEachProfile('e-mail change', (profile) => {
  const smtp = useMailServer();
  const idp = useIdp(profile, () => ({ SMTP_URL: smtp.url }));

  /** Opens Profile in `browser` and submits its form with `typed`. */
  async function saveProfile(browser: Browser, typed: Record<string, string>): Promise<Page> {
    const page = await browser.get(PROFILE).expect(200);
    const form = formOf(page.text, PROFILE);
    return browser.postForm(form.action, filled(form, typed));
  }

  const emailOf = async (user: TestUser) => (await idp.db('users').where({ id: user.id }).first('email', 'email_verified_at')) as { email: string; email_verified_at: unknown };
  /** The page as the person reads it: without what differs from browser to browser or account to account. */
  const readable = (html: string, user: TestUser) =>
    html.replace(/name="_csrf" value="[^"]*"/g, 'name="_csrf"').replaceAll(user.username, 'USERNAME').replaceAll(user.email, 'EMAIL').replace(/<time datetime="[^"]*">[^<]*<\/time>/g, '<time>');
  const pathOf = (link: URL) => `${link.pathname}${link.search}`;

  it('says a wrong or missing password is wrong whatever the new address, and changes nothing', async () => {
    const user = await makeUser(idp.db);
    const other = await makeUser(idp.db);
    const browser = await signIn(idp.url, user);
    const answers: string[] = [];
    for (const email of [other.email, `free-${unique()}@example.test`]) {
      const wrong = await saveProfile(browser, { name: user.name, email, current_password: 'not my password' });
      expect(wrong.status, email).to.equal(400);
      expect(fieldError(wrong.text, 'current_password'), email).to.equal('The current password is incorrect.');
      expect(fieldError(wrong.text, 'email'), email).to.equal(undefined);
      answers.push(readable(wrong.text, user).replace(email, 'NEW'));
      const missing = await saveProfile(browser, { name: user.name, email, current_password: '' });
      expect(fieldError(missing.text, 'current_password'), email).to.equal('Enter your current password.');
    }
    expect(answers[0]).to.equal(answers[1]);
    expect((await emailOf(user)).email).to.equal(user.email);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(smtp.countTo(other.email)).to.equal(0);
  });

  it('answers an address another account has exactly like a free one, keeps the address until the link, and tells the other owner the truth', async () => {
    const owner = await makeUser(idp.db);
    const [taker, freeTaker] = [await makeUser(idp.db), await makeUser(idp.db)];
    const free = `free-${unique()}@example.test`;
    const takenBrowser = await signIn(idp.url, taker);
    const freeBrowser = await signIn(idp.url, freeTaker);
    const taken = await saveProfile(takenBrowser, { name: taker.name, email: owner.email, current_password: taker.password });
    const fresh = await saveProfile(freeBrowser, { name: freeTaker.name, email: free, current_password: freeTaker.password });

    expect(taken.status).to.equal(302);
    expect(fresh.status).to.equal(taken.status);
    expect(taken.headers.get('location')).to.equal(`${PROFILE}?notice=email-pending`);
    expect(fresh.headers.get('location')).to.equal(taken.headers.get('location'));
    const takenPage = await takenBrowser.follow(taken).expect(200);
    const freePage = await freeBrowser.follow(fresh).expect(200);
    expect(takenPage.text).to.include('data-testid="pending-email"').and.include(owner.email).and.include('your address changes when you follow it');
    expect(readable(takenPage.text, taker).replace(owner.email, 'NEW')).to.equal(readable(freePage.text, freeTaker).replace(free, 'NEW'));
    // Both keep their addresses, still verified.
    for (const user of [taker, freeTaker]) {
      const row = await emailOf(user);
      expect(row.email).to.equal(user.email);
      expect(row.email_verified_at).to.not.equal(null);
    }

    const toOwner = await smtp.next(owner.email);
    expect(toOwner.subject).to.equal('Someone tried to move another account to your address');
    expect(toOwner.text).to.include(owner.username).and.include('nothing was created or changed');
    expect(toOwner.text).not.to.include('/change-email');
    const toFree = await smtp.next(free);
    expect(toFree.subject).to.equal('Confirm your new e-mail address');
    expect(linkIn(toFree, idp.url).pathname).to.equal('/change-email');
    expect((await emailOf(owner)).email).to.equal(owner.email);
  });

  it("changes the address when its link is followed, signed in as the account: verified, once, with a notice to the old address", async () => {
    const user = await makeUser(idp.db);
    const browser = await signIn(new Browser(idp.url, { userAgent: FIREFOX }), user);
    const email = `moved-${unique()}@example.test`;
    expect((await saveProfile(browser, { name: user.name, email, current_password: user.password })).status).to.equal(302);
    const link = linkIn(await smtp.next(email), idp.url);
    const before = Date.now();

    await browser.get(pathOf(link)).expect(302, `${PROFILE}?notice=email-changed`);
    const page = await browser.get(`${PROFILE}?notice=email-changed`).expect(200);
    expect(page.text).to.include('Your e-mail address is changed').and.include(`value="${email}"`).and.not.include('data-testid="pending-email"');
    const row = await emailOf(user);
    expect(row.email).to.equal(email);
    expect(row.email_verified_at).to.not.equal(null);

    const notice = await smtp.next(user.email);
    expect(notice.subject).to.equal('Your e-mail address was changed');
    expect(notice.text).to.include(`changed to ${email}`);
    expect(notice.text).to.include('Browser: Firefox on Windows').and.include('Address: 127.0.0.1');
    const when = Date.parse(/When: +(.+)/.exec(notice.text ?? '')![1]!.replace(' UTC', ' GMT'));
    expect(when).to.be.within(before - 2000, Date.now() + 1000);

    const again = await browser.get(pathOf(link)).expect(410);
    expect(errorMessage(again.text)).to.include('already used');
    const login = await new Browser(idp.url).get('/login');
    expect(login.status).to.equal(200);
    const signedIn = await signIn(idp.url, { username: email, password: user.password }).catch(() => undefined);
    expect(signedIn).to.not.equal(undefined);
  });

  it('asks a signed-out browser to sign in before the link changes anything, and refuses it to another account', async () => {
    const user = await makeUser(idp.db);
    const stranger = await makeUser(idp.db);
    const browser = await signIn(idp.url, user);
    const email = `signed-out-${unique()}@example.test`;
    await saveProfile(browser, { name: user.name, email, current_password: user.password });
    const link = linkIn(await smtp.next(email), idp.url);

    const signedOut = await new Browser(idp.url).get(pathOf(link)).expect(302);
    expect(signedOut.headers.get('location')).to.equal(`/login?return_to=${encodeURIComponent(pathOf(link))}`);
    const wrongAccount = await (await signIn(idp.url, stranger)).get(pathOf(link)).expect(403);
    expect(errorMessage(wrongAccount.text)).to.include('sent for another account');
    expect((await emailOf(user)).email).to.equal(user.email);

    // Signing in from the link's redirect comes back to it, and then it works.
    const later = new Browser(idp.url);
    const redirect = await later.get(pathOf(link)).expect(302);
    const loginPage = await later.get(redirect.headers.get('location')!).expect(200);
    const form = formOf(loginPage.text, '/login');
    const back = await later.postForm(form.action, filled(form, { login: user.username, password: user.password })).expect(302);
    expect(back.headers.get('location')).to.equal(pathOf(link));
    await later.get(pathOf(link)).expect(302, `${PROFILE}?notice=email-changed`);
    expect((await emailOf(user)).email).to.equal(email);
  });

  it('sends at most the limit’s mails for twelve saves with new addresses', async () => {
    const user = await makeUser(idp.db);
    const browser = await signIn(idp.url, user);
    const addresses = Array.from({ length: 12 }, (_, i) => `many-${i}-${unique()}@example.test`);
    const statuses: number[] = [];
    for (const email of addresses) {
      const answer = await saveProfile(browser, { name: user.name, email, current_password: user.password });
      statuses.push(answer.status);
      if (answer.status === 429) {
        expect(fieldError(answer.text, 'email')).to.include('Too many e-mails');
        expect(Number(answer.headers.get('retry-after'))).to.be.greaterThan(0);
      }
    }
    // RATE_LIMIT_VERIFY_EMAIL's default: five for one account in an hour.
    expect(statuses).to.deep.equal([...Array(5).fill(302), ...Array(7).fill(429)]);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(addresses.reduce((sum, email) => sum + smtp.countTo(email), 0)).to.equal(5);
    // Only the last asked for is waiting: earlier links stop working.
    const links = await Promise.all(addresses.slice(0, 5).map(async (email) => linkIn(await smtp.next(email), idp.url)));
    await browser.get(pathOf(links[0]!)).expect(410);
    await browser.get(pathOf(links[4]!)).expect(302);
    expect((await emailOf(user)).email).to.equal(addresses[4]);
  });

  it('refuses a malformed address next to its field', async () => {
    const user = await makeUser(idp.db);
    const browser = await signIn(idp.url, user);
    const res = await saveProfile(browser, { name: '', email: 'not an address', current_password: user.password });
    expect(res.status).to.equal(400);
    expect(fieldError(res.text, 'email')).to.equal('E-mail address must be a valid email address');
  });
});
