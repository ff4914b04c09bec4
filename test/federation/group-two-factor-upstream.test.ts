import { expect } from 'chai';
import { addMember } from '../../src/services/groups.js';
import { describeEachProfile, useIdp, type RunningIdp } from '../helpers/app.js';
import { signIn, type Browser } from '../helpers/browser.js';
import { groupAccess, makeGroup, makeUser } from '../helpers/factories.js';

/**
 * Rewrites how the session `browser` holds signed in (its `amr`), as the upstream sign-in flow
 * records it: `['fed', 'mfa']` after a provider trusted for two-factor said its sign-in had a
 * second factor, `['fed']` otherwise.
 */
async function signedInWith(idp: RunningIdp, browser: Browser, amr: string[]): Promise<void> {
  const session = await idp.idp.provider.Session.find(browser.cookies().get('idp_session')!);
  if (!session?.accountId) throw new Error('no signed-in session');
  session.amr = amr;
  await session.persist();
}

describeEachProfile('Groups that require two-factor, for a session signed in through an upstream provider', (profile) => {
  const idp = useIdp(profile);

  async function memberOfStrictGroup() {
    const owner = await makeUser(idp.db);
    const member = await makeUser(idp.db);
    const group = await makeGroup(idp.db, owner.id);
    await addMember(idp.db, await groupAccess(idp.db, owner.id, group.id), { user: member.username, role: 'member' });
    await idp.db('groups').where({ id: group.id }).update({ require_two_factor: true });
    return { member, group, browser: await signIn(idp.url, member) };
  }

  it('lets in a member whose upstream sign-in had a second factor the provider is trusted for (amr fed and mfa)', async () => {
    const { group, browser } = await memberOfStrictGroup();
    await browser.get(`/groups/${group.path}`).expect(303, `/account/settings/two-factor?return_to=${encodeURIComponent(`/groups/${group.path}`)}`);
    await signedInWith(idp, browser, ['fed', 'mfa']);
    await browser.get(`/groups/${group.path}`).expect(200);
  });

  it('sends a member whose upstream sign-in had no second factor it vouched for (amr fed alone) to turn it on, naming the group', async () => {
    const { group, browser } = await memberOfStrictGroup();
    await signedInWith(idp, browser, ['fed']);
    const sent = await browser.get(`/groups/${group.path}`).expect(303, `/account/settings/two-factor?return_to=${encodeURIComponent(`/groups/${group.path}`)}`);
    const page = await browser.get(sent.headers.get('location')!).expect(200);
    expect(page.text).to.include(`${group.name} requires two-factor authentication: turn it on to open its pages.`);
  });
});
