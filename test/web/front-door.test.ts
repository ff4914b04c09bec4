import { expect } from 'chai';
import { setSiteAdmin } from '../../src/services/admin.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { Browser, signIn } from '../helpers/browser.js';
import { makeApp, makeGroup, makeUser } from '../helpers/factories.js';
import { unescapeHtml } from '../helpers/html.js';

/** Every address a page links to or posts to (href, action), as written. */
function addressesIn(html: string): string[] {
  return [...html.matchAll(/<(?:a|link|form)\b[^>]*\s(?:href|action)="([^"]*)"/g)].map((m) => unescapeHtml(m[1]!));
}

/** What a person meets first and everywhere: the site's root, its icon, its links. */
describeEachProfile('Pages: the front door', (profile) => {
  const idp = useIdp(profile);

  it('sends someone signed out from / to Sign in (303), and someone signed in to their groups', async () => {
    await new Browser(idp.url).get('/').expect(303, '/login');
    const signedIn = await signIn(idp.url, await makeUser(idp.db));
    await signedIn.get('/').expect(302, '/groups');
  });

  it('has an icon: every page names /static/favicon.svg, and /favicon.ico leads there', async () => {
    const page = await new Browser(idp.url).get('/login').expect(200);
    expect(page.text).to.include('<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">');
    const icon = await new Browser(idp.url).get('/static/favicon.svg').expect(200);
    expect(icon.headers.get('content-type')).to.match(/^image\/svg\+xml/);
    expect(icon.text).to.match(/^<svg\b/);
    await new Browser(idp.url).get('/favicon.ico').expect(301, '/static/favicon.svg');
  });

  it('links to no address with a stray "?" (an empty query) on any page an owner and administrator reaches', async () => {
    const owner = await makeUser(idp.db);
    const group = await makeGroup(idp.db, owner.id);
    await makeApp(idp.db, owner.id, group.id);
    await setSiteAdmin(idp.db, { userId: 0, ip: null, admin: true }, owner, true);
    const browser = await signIn(idp.url, owner);
    // Every page reached by following links from Groups, Account settings and Admin (never signing out).
    const seen = new Set<string>();
    const queue = ['/groups', '/account/settings/profile', '/admin'];
    const stray: string[] = [];
    while (queue.length && seen.size < 80) {
      const path = queue.shift()!;
      if (seen.has(path)) continue;
      seen.add(path);
      const page = await browser.get(path);
      if (page.status !== 200) continue;
      for (const address of addressesIn(page.text)) {
        if (address.endsWith('?')) stray.push(`${path} → ${address}`);
        const url = new URL(address, page.url);
        if (url.origin === new URL(idp.url).origin && !/logout|\/static\/|\/apis\//.test(url.pathname)) queue.push(`${url.pathname}${url.search}`);
      }
    }
    expect(seen.size).to.be.greaterThan(25);
    expect(stray).to.deep.equal([]);
    // Signed out: the sign-in, sign-up and password pages.
    for (const path of ['/login', '/signup', '/forgot-password', '/login?return_to=%2Fgroups']) {
      const page = await new Browser(idp.url).get(path).expect(200);
      expect(addressesIn(page.text).filter((a) => a.endsWith('?')), path).to.deep.equal([]);
    }
  });
});
