import { expect } from 'chai';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { makeUser } from '../helpers/factories.js';
import { withClockAhead } from '../helpers/oauth.js';
import { atMidStep, codeFor } from '../helpers/totp.js';
import { signInThroughPage, useChromium } from './support.js';

/** Account settings → Two-factor authentication, clicked through in Chromium as a person would. */
describeEachProfile('Two-factor authentication in a real browser', function (profile) {
  this.timeout(60_000);

  const idp = useIdp(profile);
  const chromium = useChromium();

  it('sets up the app, makes new recovery codes and turns it off, each with a code typed into its form', async () => {
    const user = await makeUser(idp.db);
    const page = await chromium.newPage();
    await signInThroughPage(page, idp.url, user);
    await atMidStep(async () => {
      await page.goto(`${idp.url}/account/settings/two-factor`);
      await page.getByRole('button', { name: 'Set up an authenticator app' }).click();
      const secret = (await page.getByTestId('totp-secret').textContent())!.replace(/\s/g, '');
      await page.getByLabel('Code from your app').fill(await codeFor(secret));
      await page.getByRole('button', { name: 'Turn on two-factor authentication' }).click();
      await page.getByRole('heading', { name: 'Two-factor authentication is on' }).waitFor();
      const first = await page.locator('li code').allTextContents();
      expect(first).to.have.length(10);

      // Each step's code works once: the next forms get the codes of the steps that follow.
      await withClockAhead(30_000, async () => {
        await page.goto(`${idp.url}/account/settings/two-factor`);
        await page.getByRole('link', { name: 'View recovery codes' }).click();
        expect(await page.getByTestId('recovery-codes-left').textContent()).to.equal('10');
        await page.getByTestId('regenerate-form').getByLabel('Code from your app').fill(await codeFor(secret));
        await page.getByRole('button', { name: 'Generate new recovery codes' }).click();
        await page.getByRole('heading', { name: 'New recovery codes' }).waitFor();
        const fresh = await page.locator('li code').allTextContents();
        expect(fresh).to.have.length(10);
        expect(fresh).not.to.include.members(first.slice(0, 1));
      });
      await withClockAhead(60_000, async () => {
        await page.goto(`${idp.url}/account/settings/two-factor`);
        await page.getByTestId('disable-form').getByLabel('Code from your app').fill(await codeFor(secret));
        await page.getByRole('button', { name: 'Turn off two-factor authentication' }).click();
        await page.getByText('Two-factor authentication is off.').waitFor();
      });
    });
    expect(await page.getByTestId('two-factor-status').textContent()).to.include('Off');
    expect(await idp.db('user_totp').where({ user_id: user.id }).first()).to.equal(undefined);
  });
});
