import { expect } from 'chai';
import { addMember } from '../../src/services/groups.js';
import { MAX_POLICY_DAYS } from '../../src/policies/token-lifetime.js';
import { translator, type Language } from '../../src/i18n.js';
import { useIdp } from '../helpers/app.js';
import { Browser, signIn, type Page } from '../helpers/browser.js';
import { groupAccess, makeGroup, makeUser } from '../helpers/factories.js';
import { errorMessage, fieldError } from '../helpers/html.js';
import { expectIn, textOf } from '../helpers/i18n-pages.js';

describe('Groups pages in the reader\'s language', function () {
  this.timeout(60_000);
  const idp = useIdp('sqlite');

  it('keeps the English pages as they were', async () => {
    const owner = await makeUser(idp.db);
    const group = await makeGroup(idp.db, owner.id);
    const browser = await signIn(new Browser(idp.url, { headers: { 'accept-language': 'en' } }), owner);
    const show = await browser.get(`/groups/${group.path}`).expect(200);
    expect(show.text).to.include('<span class="badge">owner</span>').and.include('You are the last owner of this group: make another member an owner first, or delete the group.');
    const audit = await browser.get(`/groups/${group.path}/settings/audit`).expect(200);
    expect(textOf(audit)).to.include('Group created').and.include('The latest 200 events, newest first.');
  });

  for (const lang of ['de', 'ja'] as Language[]) {
    const t = translator(lang);
    const browserOf = (user: { username: string; password: string }) => signIn(new Browser(idp.url, { headers: { 'accept-language': lang } }), user);
    const notice = (page: Page) => /data-testid="notice">([^<]*)</.exec(page.text)?.[1];

    it(`lists no groups, then creates one through its form in ${lang}, a bad path refused in ${lang}`, async () => {
      const browser = await browserOf(await makeUser(idp.db));
      const empty = await browser.get('/groups').expect(200);
      expectIn(empty, lang);
      expect(textOf(empty)).to.include(t('groups:index.empty'));

      const form = await browser.get('/groups/new').expect(200);
      expectIn(form, lang);
      const path = `gruppe-${lang}-${Date.now()}`;
      const wrong = await browser.fill(form, '/groups/new', { [t('groups:labels.group.name')]: 'Gruppe', [t('groups:labels.group.path')]: 'Not A Path' }).expect(400);
      expectIn(wrong, lang);
      expect(fieldError(wrong.text, 'path')).to.equal(t('messages-groups:pathCharacters'));

      const made = await browser.fill(wrong, '/groups/new', { [t('groups:labels.group.path')]: path }).expect(302, `/groups/${path}?notice=created`);
      const show = await browser.follow(made).expect(200);
      expectIn(show, lang);
      expect(notice(show)).to.equal(t('groups:notices.created'));
      expect(textOf(show)).to.include(t('groups:visibility.private.label')).and.include(t('groups:roles.owner.badge'));

      const list = await browser.get('/groups').expect(200);
      expectIn(list, lang);
      expect(list.text).to.include(`<span class="badge">${t('groups:roles.owner.badge')}</span>`);
    });

    it(`shows a group and its settings in ${lang}: General, Members, Audit log, Delete, each form's error in ${lang}`, async () => {
      const owner = await makeUser(idp.db);
      const group = await makeGroup(idp.db, owner.id);
      const member = await makeUser(idp.db);
      await addMember(idp.db, await groupAccess(idp.db, owner.id, group.id), { user: member.username, role: 'maintainer' });
      const browser = await browserOf(owner);
      const base = `/groups/${group.path}`;

      const show = await browser.get(base).expect(200);
      expectIn(show, lang);

      // General: a lifetime that is not a number is refused beside its field; a good save says so.
      const general = await browser.get(`${base}/settings`).expect(200);
      expectIn(general, lang);
      const days = t('groups:labels.group.personalTokenMaxLifetimeDays');
      const bad = await browser.fill(general, `${base}/settings`, { [days]: 'viele' }).expect(400);
      expectIn(bad, lang);
      expect(fieldError(bad.text, 'personalTokenMaxLifetimeDays')).to.equal(t('messages-groups:lifetimeInvalid', { max: MAX_POLICY_DAYS }));
      const saved = await browser.follow(await browser.fill(bad, `${base}/settings`, { [days]: '30' }).expect(302)).expect(200);
      expectIn(saved, lang);
      expect(notice(saved)).to.equal(t('groups:notices.saved'));

      // Members: an unknown user refused in the page's language; one added, with the notice.
      const members = await browser.get(`${base}/settings/members`).expect(200);
      expectIn(members, lang);
      expect(textOf(members)).to.include(t('groups:roles.maintainer.explanation'));
      const who = t('groups:labels.member.user');
      const unknown = await browser.fill(members, `${base}/settings/members`, { [who]: 'nobody-here' }).expect(400);
      expectIn(unknown, lang);
      expect(fieldError(unknown.text, 'user')).to.equal(t('messages-groups:noUser', { login: 'nobody-here' }));
      const third = await makeUser(idp.db);
      const added = await browser.follow(await browser.fill(unknown, `${base}/settings/members`, { [who]: third.username }).expect(302)).expect(200);
      expectIn(added, lang);
      expect(notice(added)).to.equal(t('groups:notices.added'));

      // The last owner cannot demote themselves: the refusal in the page's language.
      const demote = await browser.submit(`${base}/settings/members/${owner.id}/role`, { role: 'member' }).expect(409);
      expectIn(demote, lang);
      expect(errorMessage(demote.text)).to.equal(t('groups:members.couldNotChangeRole', { username: owner.username, reason: t('messages-groups:keepOneOwner') }));

      // The audit log, with the edits above; then empty.
      const audit = await browser.get(`${base}/settings/audit`).expect(200);
      expectIn(audit, lang);
      expect(textOf(audit)).to.include(t('audit:group.update')).and.include(t('audit:member.add'));
      await idp.db('audit_events').where({ group_id: group.id }).del();
      const none = await browser.get(`${base}/settings/audit`).expect(200);
      expectIn(none, lang);
      expect(textOf(none)).to.include(t('groups:audit.empty'));

      // Delete: the wrong path refused beside its field.
      const del = await browser.get(`${base}/settings/delete`).expect(200);
      expectIn(del, lang);
      const wrong = await browser.fill(del, `${base}/settings/delete`, { [t('groups:delete.confirmLabel', { path: group.path })]: 'nope' }).expect(400);
      expectIn(wrong, lang);
      expect(fieldError(wrong.text, 'confirm')).to.equal(t('messages-groups:confirmPath', { path: group.path }));
    });

    it(`tells the last owner in ${lang} why they cannot leave`, async () => {
      const owner = await makeUser(idp.db);
      const group = await makeGroup(idp.db, owner.id);
      const browser = await browserOf(owner);
      const refused = await browser.submit(`/groups/${group.path}/leave`, {}).expect(409);
      expectIn(refused, lang);
      expect(errorMessage(refused.text)).to.equal(t('groups:show.couldNotLeave', { group: group.name, reason: t('messages-groups:lastOwnerLeaving') }));
    });
  }
});
