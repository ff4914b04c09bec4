import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import type { SessionIndexRow } from '../../src/db/sessions.js';
import { listSessions, pruneExpiredSessions, signOutEverywhere, signOutSession } from '../../src/services/sessions.js';
import { profiles, startIdp, type RunningIdp } from '../helpers/app.js';
import { UserAgent } from '../helpers/browser-less.js';
import { makeUser } from '../helpers/factories.js';
import { runAuthorization } from '../helpers/oauth.js';
import { makeClient, signIn, type Client, type User } from '../api/support.js';

const CHROME = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36';

/** The value of the session cookie an agent holds (the session's id: a secret of that browser). */
function sessionCookie(agent: UserAgent): string {
  const value = /(?:^|; )idp_session=([^;]*)/.exec(agent.cookieHeader())?.[1];
  if (!value) throw new Error('the agent holds no session cookie');
  return value;
}

/** Whether the agent is signed in, as its next page load sees it. */
async function signedIn(agent: UserAgent): Promise<boolean> {
  const res = await agent.get('/groups');
  expect(res.status).to.be.oneOf([200, 302]);
  return res.status === 200;
}

for (const profile of profiles()) {
  describe(`the session index and services/sessions (${profile})`, () => {
    let idp: RunningIdp;
    let client: Client;

    before(async () => {
      idp = await startIdp(profile);
      client = await makeClient(idp);
    });
    after(async () => {
      await idp?.stop();
    });

    const deps = () => ({ db: idp.idp.db, provider: idp.idp.provider });
    const rows = (userId: number): Promise<SessionIndexRow[]> => idp.idp.db('user_sessions').where({ user_id: userId }).select();

    /** A site sign-in from an agent that names itself with `userAgent`. */
    async function signInAs(user: User, userAgent = CHROME): Promise<UserAgent> {
      const agent = new UserAgent(idp.url);
      const login = await agent.request('/login', { headers: { 'user-agent': userAgent } });
      const csrf = /name="_csrf" value="([^"]*)"/.exec(await login.text())![1]!;
      const res = await agent.request('/login', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'user-agent': userAgent },
        body: new URLSearchParams({ _csrf: csrf, login: user.username, password: user.password }).toString(),
      });
      expect(res.status).to.equal(302);
      return agent;
    }

    /** A sign-in through the authorization flow only (the browser never opened the site's sign-in). */
    async function signInThroughFlow(user: User): Promise<UserAgent> {
      const agent = new UserAgent(idp.url);
      await runAuthorization(agent, { clientId: client.clientId, redirectUri: client.redirectUri, login: { login: user.username, password: user.password } });
      return agent;
    }

    it('indexes a site sign-in by uid, with the address and user agent, never by the session id', async () => {
      const user = await makeUser(idp.idp.db);
      const agent = await signInAs(user);
      const [row, ...more] = await rows(user.id);
      expect(more).to.have.length(0);
      expect(row!.uid).to.match(/^[A-Za-z0-9_-]{21,64}$/).and.not.equal(sessionCookie(agent));
      expect(row!.ip).to.equal('127.0.0.1');
      expect(row!.user_agent).to.equal(CHROME);
      expect(new Date(row!.expires_at).getTime()).to.be.closeTo(Date.now() + 14 * 86_400_000, 60_000);
      const stored = JSON.stringify(await idp.idp.db('user_sessions').select());
      expect(stored).not.to.include(sessionCookie(agent));
    });

    it('indexes a sign-in made by the authorization flow', async () => {
      const user = await makeUser(idp.idp.db);
      await signInThroughFlow(user);
      // Consent given already: this browser goes from the sign-in straight back to the
      // application, and never opens a page of the site.
      const agent = await signInThroughFlow(user);
      expect(await rows(user.id)).to.have.length(2);
      await uidOf(agent, user.id);
      expect(await signedIn(agent)).to.equal(true);
    });

    it('keeps one row per session however many pages it opens, and forgets it on sign-out', async () => {
      const user = await makeUser(idp.idp.db);
      const agent = await signIn(idp, user);
      for (let i = 0; i < 3; i += 1) expect(await signedIn(agent)).to.equal(true);
      expect(await rows(user.id)).to.have.length(1);
      const page = await (await agent.get('/groups')).text();
      const csrf = /name="_csrf" value="([^"]*)"/.exec(page)![1]!;
      expect((await agent.postForm('/logout', { _csrf: csrf })).status).to.equal(302);
      expect(await rows(user.id)).to.have.length(0);
    });

    it('lists the live sessions, the most recent first, and drops rows whose session is gone', async () => {
      const user = await makeUser(idp.idp.db);
      const earlier = await signIn(idp, user);
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
      const user = await makeUser(idp.idp.db);
      const laptop = await signIn(idp, user);
      const phone = await signInThroughFlow(user);
      await signOutSession(deps(), user.id, await uidOf(phone, user.id));
      expect(await signedIn(phone)).to.equal(false);
      expect(await signedIn(laptop)).to.equal(true);
      expect((await rows(user.id)).map((r) => r.uid)).to.deep.equal([await uidOf(laptop, user.id)]);
    });

    it("refuses to sign out a session that is not the user's (404) and leaves it working", async () => {
      const owner = await makeUser(idp.idp.db);
      const stranger = await makeUser(idp.idp.db);
      const agent = await signIn(idp, owner);
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
        const user = await makeUser(first.idp.db);
        const keep = await signIn(first, user);
        const others = [await signIn(first, user), await signIn(first, user)];
        const keepUid = (await first.idp.provider.Session.find(sessionCookie(keep)))!.uid;
        const onSecond = async (agent: UserAgent) => (await fetch(`${second.url}/groups`, { headers: { cookie: agent.cookieHeader() }, redirect: 'manual' })).status;
        for (const agent of others) expect(await onSecond(agent)).to.equal(200);
        await signOutEverywhere({ db: first.idp.db, provider: first.idp.provider }, user.id, { except: keepUid });
        for (const agent of others) expect(await onSecond(agent)).to.equal(302);
        expect(await onSecond(keep)).to.equal(200);
        expect((await first.idp.db('user_sessions').where({ user_id: user.id }).pluck('uid'))).to.deep.equal([keepUid]);
      } finally {
        await second.stop();
        await first.stop();
      }
    });

    it('signs out every session when none is kept', async () => {
      const user = await makeUser(idp.idp.db);
      const agents = [await signIn(idp, user), await signInThroughFlow(user)];
      await signOutEverywhere(deps(), user.id);
      for (const agent of agents) expect(await signedIn(agent)).to.equal(false);
      expect(await rows(user.id)).to.have.length(0);
    });

    it('prunes rows well past their expiry, and only those', async () => {
      const user = await makeUser(idp.idp.db);
      await signIn(idp, user);
      await signIn(idp, user);
      const [old, fresh] = await rows(user.id);
      await idp.idp.db('user_sessions').where({ uid: old!.uid }).update({ expires_at: new Date(Date.now() - 3_600_000).toISOString() });
      await pruneExpiredSessions(idp.idp.db);
      expect((await rows(user.id)).map((r) => r.uid)).to.deep.equal([fresh!.uid]);
    });

    /** The uid of the session an agent is signed in with, as the index lists it. */
    async function uidOf(agent: UserAgent, userId: number): Promise<string> {
      const uid = (await idp.idp.provider.Session.find(sessionCookie(agent)))?.uid;
      expect((await rows(userId)).map((r) => r.uid)).to.include(uid);
      return uid!;
    }
  });
}
