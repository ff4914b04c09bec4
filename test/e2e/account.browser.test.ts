import { expect } from 'chai';
import { addMember } from '../../src/services/groups.js';
import { call } from '../helpers/api.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { groupAccess, makeClient, makeGroup, makeUser, personalToken, type Client } from '../helpers/factories.js';
import { oauthTokens } from '../helpers/oauth.js';
import { signInThroughPage, useChromium } from './support.js';

describeEachProfile('Account settings in a real browser', function (profile) {
  this.timeout(60_000);

  const idp = useIdp(profile);
  const chromium = useChromium();
  const newBrowser = () => chromium.newPage();
  let client: Client;

  before(async () => {
    client = await makeClient(idp.db);
  });

  it('Sessions → Sign out all other sessions: the other browser is signed out on its next page load', async () => {
    const user = await makeUser(idp.db);
    const laptop = await newBrowser();
    const phone = await newBrowser();
    await signInThroughPage(phone, idp.url, user);
    await signInThroughPage(laptop, idp.url, user);

    await laptop.getByTestId('account-settings').click();
    await laptop.getByRole('link', { name: 'Sessions', exact: true }).click();
    expect(await laptop.getByTestId('session-row').count()).to.equal(2);
    expect(await laptop.locator('[data-testid="session-row"][data-current="true"]').getByTestId('current-session').isVisible()).to.equal(true);
    expect(await laptop.getByTestId('session-browser').first().textContent()).to.match(/^Chrome on Linux$/);

    laptop.once('dialog', (dialog) => void dialog.accept());
    await laptop.getByRole('button', { name: 'Sign out all other sessions' }).click();
    await laptop.getByText('Every other session is signed out.').waitFor();
    expect(await laptop.getByTestId('session-row').count()).to.equal(1);

    await phone.reload();
    expect(new URL(phone.url()).pathname).to.equal('/login');
    await laptop.goto(`${idp.url}/groups`);
    expect(new URL(laptop.url()).pathname).to.equal('/groups');
  });

  it('Delete account is disabled for the last owner of a group, naming it', async () => {
    const user = await makeUser(idp.db);
    await makeGroup(idp.db, user.id, { name: 'Only Mine' });
    const page = await newBrowser();
    await signInThroughPage(page, idp.url, user);
    await page.goto(`${idp.url}/account/settings`);
    await page.getByRole('link', { name: 'Delete account' }).click();
    await page.getByTestId('last-owner').waitFor();
    expect(await page.getByRole('button', { name: 'Delete my account' }).isDisabled()).to.equal(true);
    expect(await page.getByTestId('owned-group').textContent()).to.equal('Only Mine');
    expect(await page.getByTestId('last-owner').textContent()).to.include('You are the last owner of');
    await page.getByTestId('owned-group').click();
    expect(new URL(page.url()).pathname).to.match(/^\/groups\/[^/]+\/settings\/members$/);
  });

  it('Delete account signs the browser out and every session, OAuth token and personal token fails', async () => {
    const user = await makeUser(idp.db);
    const partner = await makeUser(idp.db);
    const group = await makeGroup(idp.db, user.id, { name: 'Shared' });
    await addMember(idp.db, await groupAccess(idp.db, user.id, group.id), { user: partner.username, role: 'owner' });
    const tokens = await oauthTokens(idp.url, client, user);
    const pat = await personalToken(idp.db, user.id);
    const other = await newBrowser();
    await signInThroughPage(other, idp.url, user);
    const page = await newBrowser();
    await signInThroughPage(page, idp.url, user);

    await page.goto(`${idp.url}/account/settings/delete`);
    expect(await page.getByText('is permanent').isVisible()).to.equal(true);
    await page.getByLabel('Your password').fill(user.password);
    await page.getByRole('button', { name: 'Delete my account' }).click();
    await page.getByTestId('account-deleted').waitFor();
    expect(new URL(page.url()).pathname).to.equal('/account/deleted');

    await page.goto(`${idp.url}/account/settings`);
    expect(new URL(page.url()).pathname).to.equal('/login');
    await other.reload();
    expect(new URL(other.url()).pathname).to.equal('/login');
    for (const token of [tokens.accessToken, pat]) expect((await call(idp, '/apis/v2/user', { token })).status).to.equal(401);
  });
});
