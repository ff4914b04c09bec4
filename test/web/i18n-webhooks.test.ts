import { expect } from 'chai';
import { addMember } from '../../src/services/groups.js';
import { translator, type Language } from '../../src/i18n.js';
import { listen, useHooks, useIdp, waitFor } from '../helpers/app.js';
import { Browser, signIn, type Page } from '../helpers/browser.js';
import { groupAccess, makeGroup, makeUser } from '../helpers/factories.js';
import { fieldError, formAction } from '../helpers/html.js';
import { expectIn, textOf } from '../helpers/i18n-pages.js';

describe('Webhooks pages in the reader\'s language', function () {
  this.timeout(60_000);
  // /fail/… answers 500, so a delivery stays pending with an error; anything else 200.
  const receiver = useHooks(
    () => listen((req, res) => req.resume().on('end', () => res.writeHead(req.url?.startsWith('/fail/') ? 500 : 200).end())),
    (server) => server.close(),
  );
  const idp = useIdp('sqlite', { WEBHOOKS_ALLOW_PRIVATE: 'true', WEBHOOKS_POLL_MS: '50', WEBHOOKS_RETRY_MS: '100' });

  for (const lang of ['de', 'ja'] as Language[]) {
    const t = translator(lang);
    const notice = (page: Page) => /data-testid="notice">([^<]*)</.exec(page.text)?.[1];

    it(`adds a webhook through its form in ${lang}, its errors in ${lang}, and shows its deliveries, redelivery and deletion in ${lang}`, async () => {
      const owner = await makeUser(idp.db);
      const group = await makeGroup(idp.db, owner.id);
      const browser = await signIn(new Browser(idp.url, { headers: { 'accept-language': lang } }), owner);
      const base = `/groups/${group.path}/settings/webhooks`;

      const empty = await browser.get(base).expect(200);
      expectIn(empty, lang);
      expect(textOf(empty)).to.include(t('webhooks:list.empty')).and.include(t('common:groupNav.webhooks'));

      // Add webhook: a bad URL and a short secret refused beside their fields, in the page's language.
      const form = await browser.get(`${base}/new`).expect(200);
      expectIn(form, lang);
      const url = t('webhooks:labels.url');
      const secret = t('webhooks:labels.secret');
      const bad = await browser.fill(form, '/webhooks/new', { [url]: 'kein-url', [secret]: 'kurz' }).expect(400);
      expectIn(bad, lang);
      expect(fieldError(bad.text, 'url')).to.equal(t('messages-webhooks:urlAbsolute'));
      expect(fieldError(bad.text, 'secret')).to.equal(t('messages-webhooks:secretShort', { min: 16 }));
      const noEvents = Object.fromEntries(
        ['member.added', 'member.removed', 'member.role_changed', 'application.created', 'application.updated', 'application.deleted', 'client_secret.created',
          'client_secret.revoked', 'group.updated', 'group.deleted', 'credentials.revoked'].map((code) => [`${code} ${t(`webhooks:events.${code}.name`)}`, 'unchecked']),
      );
      const none = await browser.fill(bad, '/webhooks/new', { [url]: `${receiver.url}/fail/${lang}`, [secret]: 'a-long-enough-secret', ...noEvents }).expect(400);
      expectIn(none, lang);
      expect(fieldError(none.text, 'events')).to.equal(t('messages-webhooks:eventsNone'));

      const made = await browser.fill(none, '/webhooks/new', { [`member.added ${t('webhooks:events.member.added.name')}`]: 'checked' }).expect(302);
      const hook = await browser.follow(made).expect(200);
      expectIn(hook, lang);
      expect(notice(hook)).to.equal(t('webhooks:notices.created'));
      const href = made.headers.get('location')!.replace(/\?.*$/, '');

      // A delivery the receiver refuses: pending, with the next attempt, in the page's language.
      await addMember(idp.db, await groupAccess(idp.db, owner.id, group.id), { user: (await makeUser(idp.db)).username, role: 'member' });
      let shown: Page | undefined;
      await waitFor(async () => /data-testid="attempts">[1-9]/.test((shown = await browser.get(href)).text), () => 'no attempt shown');
      expectIn(shown!, lang);
      expect(textOf(shown!)).to.include(t('webhooks:states.pending')).and.include(t('webhooks:deliveries.nextAttempt'));

      const list = await browser.get(base).expect(200);
      expectIn(list, lang);
      expect(textOf(list)).to.include(t('webhooks:events.member.added.name')).and.include(t('webhooks:active.on'));

      const id = /data-testid="delivery-row" data-delivery-id="(\d+)"/.exec(shown!.text)![1]!;
      const again = await browser.follow(await browser.submit(formAction(shown!.text, `/deliveries/${id}/redeliver`)).expect(302)).expect(200);
      expectIn(again, lang);
      expect(notice(again)).to.equal(t('webhooks:notices.redelivered'));

      // A bad edit refused in the page's language, then a good save.
      const refused = await browser.fill(again, href, { [url]: 'https://hooks.example.test/#x' }).expect(400);
      expectIn(refused, lang);
      expect(fieldError(refused.text, 'url')).to.equal(t('messages-webhooks:urlFragment'));
      const saved = await browser.follow(await browser.fill(refused, href, { [url]: `${receiver.url}/ok/${lang}` }).expect(302)).expect(200);
      expectIn(saved, lang);
      expect(notice(saved)).to.equal(t('webhooks:notices.saved'));

      const ask = await browser.get(`${href}/delete`).expect(200);
      expectIn(ask, lang);
      const gone = await browser.follow(await browser.fill(ask, `${href}/delete`).expect(302)).expect(200);
      expectIn(gone, lang);
      expect(notice(gone)).to.equal(t('webhooks:notices.deleted'));

      const audit = await browser.get(`/groups/${group.path}/settings/audit`).expect(200);
      expectIn(audit, lang);
      expect(textOf(audit)).to.include(t('audit:webhook.create')).and.include(t('webhooks:labels.url'));
    });

    it(`says in ${lang} why a delivery failed`, async () => {
      const owner = await makeUser(idp.db);
      const group = await makeGroup(idp.db, owner.id);
      const browser = await signIn(new Browser(idp.url, { headers: { 'accept-language': lang } }), owner);
      const base = `/groups/${group.path}/settings/webhooks`;
      // Nothing listens on the receiver's port once it is closed: the connection is refused.
      const closed = await listen();
      await closed.close();
      const form = await browser.get(`${base}/new`).expect(200);
      const made = await browser.fill(form, '/webhooks/new', { [t('webhooks:labels.url')]: `${closed.url}/hook` }).expect(302);
      const href = made.headers.get('location')!.replace(/\?.*$/, '');
      await addMember(idp.db, await groupAccess(idp.db, owner.id, group.id), { user: (await makeUser(idp.db)).username, role: 'member' });
      let page: Page | undefined;
      await waitFor(async () => (page = await browser.get(href)).text.includes('data-testid="delivery-error"'), () => 'no failed attempt shown');
      expectIn(page!, lang);
      expect(/data-testid="delivery-error">([^<]*)</.exec(page!.text)?.[1]).to.equal(t('messages-webhooks:connectionRefused'));
    });
  }
});
