import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import type { SessionIndexRow } from '../../src/db/sessions.js';
import { listSessions, pruneExpiredSessions, signOutEverywhere, signOutSession } from '../../src/services/sessions.js';
import { describeEachProfile, startIdp, useIdp } from '../helpers/app.js';
import { Browser, signIn } from '../helpers/browser.js';
import { makeClient, makeUser, type Client, type TestUser } from '../helpers/factories.js';
import { authorize } from '../helpers/oauth.js';

const CHROME = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36';

/** The value of the session cookie a browser holds (the session's id: a secret of that browser). */
function sessionCookie(browser: Browser): string {
  const value = browser.cookies().get('idp_session');
  if (!value) throw new Error('the browser holds no session cookie');
  return value;
}

/** Whether the browser is signed in, as its next page load sees it. */
async function signedIn(browser: Browser): Promise<boolean> {
  const res = await browser.get('/groups');
  expect(res.status).to.be.oneOf([200, 302]);
  return res.status === 200;
}

describeEachProfile('the session index and services/sessions', (profile) => {
  const idp = useIdp(profile);
  let client: Client;

  before(async () => {
    client = await makeClient(idp.db);
  });

  const deps = () => ({ db: idp.db, provider: idp.idp.provider });
  const rows = (userId: number): Promise<SessionIndexRow[]> => idp.db('user_sessions').where({ user_id: userId }).select();

  /** A site sign-in from a browser that names itself with `userAgent`. */
  async function signInAs(user: TestUser, userAgent = CHROME): Promise<Browser> {
    const browser = new Browser(idp.url);
    await browser.request('/login', { headers: { 'user-agent': userAgent } }).expect(200);
    await browser
      .request('/login', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'user-agent': userAgent },
        body: new URLSearchParams({ _csrf: browser.csrf, login: user.username, password: user.password }).toString(),
      })
      .expect(302);
    return browser;
  }

  /** A sign-in through the authorization flow only (the browser never opened the site's sign-in). */
  async function signInThroughFlow(user: TestUser): Promise<Browser> {
    const browser = new Browser(idp.url);
    await authorize(browser, { clientId: client.clientId, redirectUri: client.redirectUri }, user);
    return browser;
  }

  it('indexes a site sign-in by uid, with the address and user agent, never by the session id', async () => {
    const user = await makeUser(idp.db);
    const agent = await signInAs(user);
    const [row, ...more] = await rows(user.id);
    expect(more).to.have.length(0);
    expect(row!.uid).to.match(/^[A-Za-z0-9_-]{21,64}$/).and.not.equal(sessionCookie(agent));
    expect(row!.ip).to.equal('127.0.0.1');
    expect(row!.user_agent).to.equal(CHROME);
    expect(new Date(row!.expires_at).getTime()).to.be.closeTo(Date.now() + 14 * 86_400_000, 60_000);
    const stored = JSON.stringify(await idp.db('user_sessions').select());
    expect(stored).not.to.include(sessionCookie(agent));
  });

  it('indexes a sign-in made by the authorization flow', async () => {
    const user = await makeUser(idp.db);
    await signInThroughFlow(user);
    // Consent given already: this browser goes from the sign-in straight back to the
    // application, and never opens a page of the site.
    const agent = await signInThroughFlow(user);
    expect(await rows(user.id)).to.have.length(2);
    await uidOf(agent, user.id);
    expect(await signedIn(agent)).to.equal(true);
  });

  it('keeps one row per session however many pages it opens, and forgets it on sign-out', async () => {
    const user = await makeUser(idp.db);
    const agent = await signIn(idp.url, user);
    for (let i = 0; i < 3; i += 1) expect(await signedIn(agent)).to.equal(true);
    expect(await rows(user.id)).to.have.length(1);
    await agent.get('/groups').expect(200);
    await agent.submit('/logout').expect(302);
    expect(await rows(user.id)).to.have.length(0);
  });

  it('lists the live sessions, the most recent first, and drops rows whose session is gone', async () => {
    const user = await makeUser(idp.db);
    const earlier = await signIn(idp.url, user);
    const later = await signInThroughFlow(user);
    const listed = await listSessions(deps(), user.id);
    expect(listed.map((s) => s.uid)).to.deep.equal([await uidOf(later, user.id), await uidOf(earlier, user.id)]);
    // Gone from the store behind the index's back (as an expired session is).
    await (idp.idp.provider.Session.adapter as unknown as { destroyByUid(uid: string): Promise<void> }).destroyByUid(listed[0]!.uid);
    const after = await listSessions(deps(), user.id);
    expect(after.map((s) => s.uid)).to.deep.equal([listed[1]!.uid]);
    expect((await rows(user.id)).map((r) => r.uid)).to.deep.equal([listed[1]!.uid]);
  });

  it('signs one session out at once, leaving the others', async () => {
    const user = await makeUser(idp.db);
    const laptop = await signIn(idp.url, user);
    const phone = await signInThroughFlow(user);
    await signOutSession(deps(), user.id, await uidOf(phone, user.id));
    expect(await signedIn(phone)).to.equal(false);
    expect(await signedIn(laptop)).to.equal(true);
    expect((await rows(user.id)).map((r) => r.uid)).to.deep.equal([await uidOf(laptop, user.id)]);
  });

  it("refuses to sign out a session that is not the user's (404) and leaves it working", async () => {
    const owner = await makeUser(idp.db);
    const stranger = await makeUser(idp.db);
    const agent = await signIn(idp.url, owner);
    const [row] = await rows(owner.id);
    const error = await signOutSession(deps(), stranger.id, row!.uid).then(() => undefined, (err: unknown) => err);
    expect(error).to.have.property('status', 404);
    expect(await signedIn(agent)).to.equal(true);
  });

  it('signs out every session but the one named, on every instance sharing the store', async () => {
    // Two instances of one deployment: the same database, the same Redis keys.
    const keyPrefix = `idp-test:${randomBytes(4).toString('hex')}:`;
    const first = await startIdp(profile, {}, undefined, keyPrefix);
    const second = await startIdp(profile, {}, first.database, keyPrefix);
    try {
      const user = await makeUser(first.db);
      const keep = await signIn(first.url, user);
      const others = [await signIn(first.url, user), await signIn(first.url, user)];
      const keepUid = (await first.idp.provider.Session.find(sessionCookie(keep)))!.uid;
      const onSecond = async (agent: Browser) => (await fetch(`${second.url}/groups`, { headers: { cookie: agent.cookieHeader() }, redirect: 'manual' })).status;
      for (const agent of others) expect(await onSecond(agent)).to.equal(200);
      await signOutEverywhere({ db: first.db, provider: first.idp.provider }, user.id, { except: keepUid });
      for (const agent of others) expect(await onSecond(agent)).to.equal(302);
      expect(await onSecond(keep)).to.equal(200);
      expect((await first.db('user_sessions').where({ user_id: user.id }).pluck('uid'))).to.deep.equal([keepUid]);
    } finally {
      await second.stop();
      await first.stop();
    }
  });

  it('signs out every session when none is kept', async () => {
    const user = await makeUser(idp.db);
    const agents = [await signIn(idp.url, user), await signInThroughFlow(user)];
    await signOutEverywhere(deps(), user.id);
    for (const agent of agents) expect(await signedIn(agent)).to.equal(false);
    expect(await rows(user.id)).to.have.length(0);
  });

  it('prunes rows well past their expiry, and only those', async () => {
    const user = await makeUser(idp.db);
    await signIn(idp.url, user);
    await signIn(idp.url, user);
    const [old, fresh] = await rows(user.id);
    await idp.db('user_sessions').where({ uid: old!.uid }).update({ expires_at: new Date(Date.now() - 3_600_000).toISOString() });
    await pruneExpiredSessions(idp.db);
    expect((await rows(user.id)).map((r) => r.uid)).to.deep.equal([fresh!.uid]);
  });

  /** The uid of the session an agent is signed in with, as the index lists it. */
  async function uidOf(agent: Browser, userId: number): Promise<string> {
    const uid = (await idp.idp.provider.Session.find(sessionCookie(agent)))?.uid;
    expect((await rows(userId)).map((r) => r.uid)).to.include(uid);
    return uid!;
  }
});
