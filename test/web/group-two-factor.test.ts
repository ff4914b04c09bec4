import { expect } from 'chai';
import { addMember, updateGroupSettings } from '../../src/services/groups.js';
import { call, expectApiError } from '../helpers/api.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { signIn } from '../helpers/browser.js';
import { groupAccess, makeGroup, makeUser, personalToken } from '../helpers/factories.js';
import { fieldError } from '../helpers/html.js';
import { atMidStep, codeFor, withTwoFactor } from '../helpers/totp.js';

const SETUP = '/account/settings/two-factor';

describeEachProfile('Groups that require two-factor authentication', (profile) => {
  const idp = useIdp(profile);

  async function groupWithMember() {
    const owner = await makeUser(idp.db);
    const member = await makeUser(idp.db);
    const group = await makeGroup(idp.db, owner.id);
    await addMember(idp.db, await groupAccess(idp.db, owner.id, group.id), { user: member.username, role: 'member' });
    return { owner, member, group };
  }

  const settings = (group: { name: string; description: string; visibility_level: string }, requireTwoFactor: boolean) => ({
    name: group.name,
    description: group.description,
    visibilityLevel: group.visibility_level,
    ...(requireTwoFactor ? { requireTwoFactor: 'on' } : {}),
  });

  it('an owner without two-factor cannot require it (they would lock themselves out)', async () => {
    const { owner, group } = await groupWithMember();
    const browser = await signIn(idp.url, owner);
    await browser.get(`/groups/${group.path}/settings`).expect(200);
    const refused = await browser.submit(`/groups/${group.path}/settings`, settings(group, true)).expect(400);
    expect(fieldError(refused.text, 'requireTwoFactor')).to.match(/^Require two-factor authentication needs two-factor authentication on your own account first/);
    expect((await idp.db('groups').where({ id: group.id }).first('require_two_factor')).require_two_factor).to.be.oneOf([false, 0]);
  });

  it('an owner without two-factor who also leaves the name empty is told both at once', async () => {
    const { owner, group } = await groupWithMember();
    const browser = await signIn(idp.url, owner);
    const page = await browser.get(`/groups/${group.path}/settings`).expect(200);
    const refused = await browser.fill(page, `/groups/${group.path}/settings`, { Name: '', 'Require two-factor authentication': 'checked' }).expect(400);
    expect(fieldError(refused.text, 'name')).to.equal('Name is required');
    expect(fieldError(refused.text, 'requireTwoFactor')).to.match(/^Require two-factor authentication needs two-factor authentication on your own account first/);
  });

  it('members without it are marked in Members, sent from the group’s pages to turn it on, and refused the API (403 naming why) until they do', async () => {
    const { owner, member, group } = await groupWithMember();
    // Signed in before turning it on: this session stays signed in.
    const ownerSite = await signIn(idp.url, owner);
    await withTwoFactor(idp.db, owner);
    await ownerSite.get(`/groups/${group.path}/settings`).expect(200);
    await ownerSite.submit(`/groups/${group.path}/settings`, settings(group, true)).expect(302);
    const members = await ownerSite.get(`/groups/${group.path}/settings/members`).expect(200);
    const rowOf = (username: string) => new RegExp(`data-username="${username}">[\\s\\S]*?</tr>`).exec(members.text)?.[0] ?? '';
    expect(rowOf(member.username)).to.include('data-testid="no-two-factor"');
    expect(rowOf(owner.username)).not.to.include('data-testid="no-two-factor"');

    const memberSite = await signIn(idp.url, member);
    await memberSite.get(`/groups/${group.path}`).expect(303, `${SETUP}?return_to=${encodeURIComponent(`/groups/${group.path}`)}`);
    const token = await personalToken(idp.db, member.id);
    const api = await call(idp, `/apis/v2/groups/${group.id}`, { token });
    expectApiError(api, 403, 'two_factor_required');
    expect(api.body.error_description).to.include(group.name);

    await withTwoFactor(idp.db, member);
    await memberSite.get(`/groups/${group.path}`).expect(200);
    const allowed = await call(idp, `/apis/v2/groups/${group.id}`, { token });
    expect(allowed.status).to.equal(200);
    expect(allowed.body.data.requireTwoFactor).to.equal(true);

    const trail = await idp.db('audit_events').where({ group_id: group.id, action: 'group.update' }).first('details');
    expect(JSON.parse(trail.details).changes.requireTwoFactor).to.deep.equal({ from: false, to: true });
  });

  /** A group that requires two-factor authentication, its owner (with it) and a member (without). */
  async function requiringGroup() {
    const { owner, member, group } = await groupWithMember();
    await withTwoFactor(idp.db, owner);
    await updateGroupSettings(idp.db, await groupAccess(idp.db, owner.id, group.id), { ...settings(group, false), requireTwoFactor: true });
    return { owner, member, group };
  }

  const reasonOn = (html: string) => /data-testid="two-factor-reason"><p>([^<]*)</.exec(html)?.[1];

  it('sends a member without it from any of the group’s pages (303) to turn it on, saying which group asks, and back to that page once it is on', async () => {
    const { owner, group } = await requiringGroup();
    const maintainer = await makeUser(idp.db);
    await addMember(idp.db, await groupAccess(idp.db, owner.id, group.id), { user: maintainer.username, role: 'maintainer' });
    const browser = await signIn(idp.url, maintainer);
    const wanted = `/groups/${group.path}/settings/members`;
    const sent = await browser.get(wanted).expect(303, `${SETUP}?return_to=${encodeURIComponent(wanted)}`);
    // A form posted meanwhile changes nothing and comes back to the group's page.
    await browser.submit(`/groups/${group.path}/leave`).expect(303, `${SETUP}?return_to=${encodeURIComponent(`/groups/${group.path}`)}`);
    expect((await idp.db('memberships').where({ group_id: group.id, user_id: maintainer.id }).first('role')).role).to.equal('maintainer');

    const status = await browser.get(sent.headers.get('location')!).expect(200);
    expect(reasonOn(status.text)).to.equal(`${group.name} requires two-factor authentication: turn it on to open its pages.`);
    await browser.fill(status, `${SETUP}/setup`).expect(302, `${SETUP}/setup?return_to=${encodeURIComponent(wanted)}`);
    const setup = await browser.get(`${SETUP}/setup?return_to=${encodeURIComponent(wanted)}`).expect(200);
    expect(reasonOn(setup.text)).to.equal(`${group.name} requires two-factor authentication: turn it on to open its pages.`);
    const secret = /data-testid="totp-secret">([A-Z2-7 ]+)</.exec(setup.text)![1]!.replace(/ /g, '');
    await atMidStep(async () =>
      browser.fill(setup, `${SETUP}/setup/confirm`, { 'Code from your app': await codeFor(secret) }).expect(302, `${SETUP}/recovery-codes?return_to=${encodeURIComponent(wanted)}`));
    const codes = await browser.get(`${SETUP}/recovery-codes?return_to=${encodeURIComponent(wanted)}`).expect(200);
    expect(/href="([^"]*)" data-testid="codes-saved"/.exec(codes.text)?.[1]).to.equal(wanted);
    await browser.get(wanted).expect(200);
  });

  it('names no group on the two-factor page for an address elsewhere, or a group the viewer is not in, and never goes back off the site', async () => {
    const { group } = await requiringGroup();
    const stranger = await signIn(idp.url, await makeUser(idp.db));
    const page = await stranger.get(`${SETUP}?return_to=${encodeURIComponent(`/groups/${group.path}`)}`).expect(200);
    expect(reasonOn(page.text)).to.equal(undefined);
    expect(page.text).not.to.include(group.name);
    const offSite = await stranger.get(`${SETUP}?return_to=${encodeURIComponent('//evil.example/groups/x')}`).expect(200);
    expect(offSite.text).not.to.include('evil.example');
  });

  it('marks on Groups the groups that require it, and those the viewer cannot open yet with a way to turn it on', async () => {
    const { owner, member, group } = await groupWithMember();
    // Signed in before two-factor authentication is on: this session stays signed in.
    const ownerSite = await signIn(idp.url, owner);
    await withTwoFactor(idp.db, owner);
    await updateGroupSettings(idp.db, await groupAccess(idp.db, owner.id, group.id), { ...settings(group, false), requireTwoFactor: true });
    const itemOf = (html: string) => new RegExp(`data-path="${group.path}">[\\s\\S]*?</li>`).exec(html)?.[0] ?? '';
    const ownersList = await ownerSite.get('/groups').expect(200);
    expect(itemOf(ownersList.text)).to.include('Two-factor required');
    expect(itemOf(ownersList.text)).not.to.include('data-testid="closed-for-two-factor"');
    const membersList = await (await signIn(idp.url, member)).get('/groups').expect(200);
    expect(itemOf(membersList.text)).to.include('Two-factor required');
    expect(itemOf(membersList.text)).to.include(`href="${SETUP}?return_to=${encodeURIComponent(`/groups/${group.path}`)}" data-testid="closed-for-two-factor"`);
  });

  it('a stranger still gets the 404 of a group they cannot see, not the two-factor reason', async () => {
    const { owner, group } = await groupWithMember();
    const ownerSite = await signIn(idp.url, owner);
    await withTwoFactor(idp.db, owner);
    await ownerSite.get(`/groups/${group.path}/settings`).expect(200);
    await ownerSite.submit(`/groups/${group.path}/settings`, settings(group, true)).expect(302);
    const stranger = await makeUser(idp.db);
    const res = await call(idp, `/apis/v2/groups/${group.id}`, { token: await personalToken(idp.db, stranger.id) });
    expectApiError(res, 404, 'not_found');
  });
});
