import { expect } from 'chai';
import { useIdp } from '../helpers/app.js';
import { Browser, signIn, type Page } from '../helpers/browser.js';
import { groupAccess, makeApp, makeGroup, makeUser } from '../helpers/factories.js';
import { unescapeHtml } from '../helpers/html.js';
import { expectNoEnglish, textOf } from '../helpers/i18n-pages.js';
import { setSiteAdmin } from '../../src/services/admin.js';
import { addMember } from '../../src/services/groups.js';
import { createProvider } from '../../src/services/federation/manage.js';
import { createResource } from '../../src/services/resources/manage.js';
import { createWebhook } from '../../src/services/webhooks/manage.js';
import { LANGUAGES, type Language } from '../../src/i18n.js';

/**
 * Every page a person reaches by following links, read in German and in Japanese: each says it is
 * in that language, and shows no English sentence of the resources. A page that a new route adds
 * and nobody translated is found here, without anyone listing it.
 */
describe('Every page reached by links, in the reader\'s language', function () {
  this.timeout(120_000);
  const idp = useIdp('sqlite');
  const MAX_PAGES = 120;

  let admin: Awaited<ReturnType<typeof makeUser>>;
  before(async () => {
    admin = await makeUser(idp.db, { name: 'Ada Admin' });
    await setSiteAdmin(idp.db, { userId: 0, ip: null, admin: true }, admin, true);
    const group = await makeGroup(idp.db, admin.id, { name: 'Living Room Screens' });
    await makeApp(idp.db, admin.id, group.id, { name: 'TV App' });
    await makeApp(idp.db, admin.id, group.id, { name: 'Phone App', type: 'public' });
    // A client that registered itself, for its badge and its page without a settings form.
    const agent = await makeApp(idp.db, admin.id, group.id, { name: 'Agent', type: 'public' });
    await idp.db('oauth_apps').where({ client_id: agent.clientId }).update({ registered_by: 'dynamic', registered_from: '203.0.113.7' });
    // A webhook with a delivery (refused: this server allows no private targets), for its page's Recent deliveries.
    const access = await groupAccess(idp.db, admin.id, group.id);
    await createWebhook({ db: idp.db, cipher: undefined, allowPrivate: true }, access, { url: 'http://127.0.0.1:9/hook', secret: 'a-secret-for-the-crawl', events: ['member.added'] });
    await addMember(idp.db, access, { user: (await makeUser(idp.db)).username, role: 'member' });
    // A resource, for its page: its credentials, its metadata and its form with scope rows.
    await createResource({ db: idp.db, issuer: idp.url }, access, { identifier: 'https://screens.example.test/mcp', name: 'Screens API', scopes: [{ name: 'screens:read', description: 'See the screens' }] });
    // A directory (LDAP), for its provider page and its form with text areas (nothing here asks it).
    await createProvider({ db: idp.db, cipher: undefined }, { userId: 0, ip: null, admin: true }, {
      kind: 'ldap',
      slug: 'corp-directory',
      name: 'Corp Directory',
      client_id: 'cn=idp-service,dc=example,dc=org',
      client_secret: 'a service password',
      settings: { url: 'ldaps://127.0.0.1:9', user_base: 'ou=people,dc=example,dc=org', user_filter: '(uid={{username}})', username_attribute: 'uid', email_attribute: 'mail', name_attribute: 'cn', id_attribute: 'entryUUID', group_mapping: 'cn=developers,ou=groups,dc=example,dc=org = screens member' },
    });
  });

  /** The site's own links of a page (no script, style, API or sign-out). */
  function linksOf(page: Page): URL[] {
    const found: URL[] = [];
    for (const [, href] of page.text.matchAll(/<a\b[^>]*\shref="([^"#]+)"/g)) {
      const url = new URL(unescapeHtml(href!), page.url);
      if (url.origin !== page.url.origin || /^\/(static|apis|\.well-known)\//.test(url.pathname) || url.pathname === '/favicon.ico') continue;
      found.push(url);
    }
    return found;
  }

  /** Opens `seeds` and every page linked from them, breadth first; the problems of each page that is not wholly in `lang`. */
  async function crawl(browser: Browser, seeds: string[], lang: Language): Promise<{ read: string[]; problems: string[] }> {
    const queue = seeds.map((path) => new URL(path, idp.url));
    const seen = new Set<string>();
    const read: string[] = [];
    const problems: string[] = [];
    while (queue.length && read.length < MAX_PAGES) {
      const url = queue.shift()!;
      // One page per path: a list's pages and notices differ only in their values.
      if (seen.has(url.pathname)) continue;
      seen.add(url.pathname);
      const page = await browser.follow(url);
      if (page.status !== 200 || !(page.headers.get('content-type') ?? '').startsWith('text/html')) continue;
      read.push(url.pathname);
      if (!page.text.includes(`<html lang="${lang}">`)) problems.push(`${url.pathname}: <html lang> is not ${lang}`);
      try {
        expectNoEnglish(textOf(page), `${url.pathname}`);
      } catch (err) {
        problems.push((err as Error).message.split('\n')[0]!);
      }
      queue.push(...linksOf(page));
    }
    return { read, problems };
  }

  for (const lang of LANGUAGES.filter((l) => l !== 'en')) {
    it(`shows every page a signed-out visitor reaches in ${lang}`, async () => {
      const { read, problems } = await crawl(new Browser(idp.url, { headers: { 'accept-language': lang } }), ['/login', '/signup', '/forgot-password'], lang);
      expect(read).to.include.members(['/login', '/signup', '/forgot-password']);
      expect(problems, problems.join('\n')).to.deep.equal([]);
    });

    it(`shows every page a site administrator who owns a group reaches in ${lang}`, async () => {
      const browser = await signIn(new Browser(idp.url, { headers: { 'accept-language': lang } }), admin);
      const { read, problems } = await crawl(browser, ['/groups', '/account/settings/profile', '/admin/users'], lang);
      // The crawl got round: the areas' pages, not only the seeds.
      expect(read.length, read.join(" ")).to.be.greaterThan(25);
      for (const page of [/^\/admin\/users\/\d+$/, /^\/admin\/client-registration$/, /^\/admin\/providers\/corp-directory$/, /^\/admin\/providers\/corp-directory\/edit$/, /^\/groups\/[^/]+\/settings\/developer\/apps\/[^/]+$/, /^\/groups\/[^/]+\/settings\/webhooks\/\d+$/, /^\/groups\/[^/]+\/settings\/resources\/\d+$/, /^\/groups\/[^/]+\/settings\/resources\/new$/, /^\/account\/settings\/tokens$/]) {
        expect(read.some((path) => page.test(path)), `${page} among ${read.join(' ')}`).to.equal(true);
      }
      expect(problems, problems.join('\n')).to.deep.equal([]);
    });
  }
});
