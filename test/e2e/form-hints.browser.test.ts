import { expect } from 'chai';
import { updateGroupSettings } from '../../src/services/groups.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { groupAccess, makeGroup, makeUser } from '../helpers/factories.js';
import { signInThroughPage, useChromium } from './support.js';

/** What forms say as a person fills them in, before anything is sent. */
describeEachProfile('Form hints in a real browser', function (profile) {
  this.timeout(60_000);
  const idp = useIdp(profile);
  const chromium = useChromium();

  it('the token form names, under Expiration, the groups whose cap is shorter than the expiration chosen', async () => {
    const user = await makeUser(idp.db);
    await makeGroup(idp.db, user.id, { name: 'Open' });
    const weekly = await makeGroup(idp.db, user.id, { name: 'Weekly' });
    await updateGroupSettings(idp.db, await groupAccess(idp.db, user.id, weekly.id), { name: 'Weekly', description: '', visibilityLevel: 'private', personalTokenMaxLifetimeDays: 7 });
    const page = await chromium.newPage();
    await signInThroughPage(page, idp.url, user);
    await page.goto(`${idp.url}/account/settings/tokens`);
    const note = page.getByTestId('lifetime-note');

    // All my groups, 30 days (the default): Weekly will not take it.
    expect(await note.textContent()).to.equal('Weekly limits tokens to 7 days. The token will not work in those groups.');
    await page.getByLabel('Expiration').selectOption('7');
    expect(await note.isHidden()).to.equal(true);

    await page.getByLabel('Only these groups').check();
    await page.getByLabel('Expiration').selectOption('90');
    await page.getByLabel('Open').check();
    expect(await note.isHidden()).to.equal(true);
    await page.getByLabel('Weekly').check();
    expect(await note.textContent()).to.equal('Weekly limits tokens to 7 days. Choose a shorter expiration, or leave those groups out.');
    expect(await note.isVisible()).to.equal(true);
  });
});
