import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import type { Page } from 'playwright-core';
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

  /** Sets up the app on the page's forms (within atMidStep); ends on the page showing the recovery codes; returns the secret. */
  async function turnOnThroughPage(page: Page): Promise<string> {
    await page.goto(`${idp.url}/account/settings/two-factor`);
    await page.getByRole('button', { name: 'Set up an authenticator app' }).click();
    const secret = (await page.getByTestId('totp-secret').textContent())!.replace(/\s/g, '');
    await page.getByLabel('Code from your app').fill(await codeFor(secret));
    await page.getByRole('button', { name: 'Turn on two-factor authentication' }).click();
    await page.getByRole('heading', { name: 'Two-factor authentication is on' }).waitFor();
    return secret;
  }

  it('sets up the app, makes new recovery codes and turns it off, each with a code typed into its form', async () => {
    const user = await makeUser(idp.db);
    const page = await chromium.newPage();
    await signInThroughPage(page, idp.url, user);
    await atMidStep(async () => {
      const secret = await turnOnThroughPage(page);
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

  it('the recovery codes shown: Copy puts them on the clipboard, Download saves them as text, Print prints them alone', async () => {
    const user = await makeUser(idp.db);
    const page = await chromium.newPage({ permissions: ['clipboard-read', 'clipboard-write'] });
    // window.print is the browser's dialog: recorded instead of opened.
    await page.addInitScript(() => {
      (window as unknown as { printed: number }).printed = 0;
      window.print = () => { (window as unknown as { printed: number }).printed += 1; };
    });
    await signInThroughPage(page, idp.url, user);
    await atMidStep(() => turnOnThroughPage(page));
    const codes = await page.getByTestId('recovery-codes').locator('li').allTextContents();
    expect(codes).to.have.length(10);

    await page.getByRole('button', { name: 'Copy' }).click();
    await page.getByRole('button', { name: 'Copied' }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).to.equal(codes.join('\n'));

    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Download' }).click()]);
    expect(download.suggestedFilename()).to.equal('horizon-id-recovery-codes.txt');
    const text = readFileSync((await download.path())!, 'utf8');
    expect(text).to.include(user.username);
    for (const code of codes) expect(text).to.include(code);

    await page.getByRole('button', { name: 'Print' }).click();
    expect(await page.evaluate(() => (window as unknown as { printed: number }).printed)).to.equal(1);
    const forPrint = page.getByText(`Horizon ID recovery codes for ${user.username}`);
    expect(await forPrint.isVisible(), 'the account name is for the printout only').to.equal(false);
    await page.emulateMedia({ media: 'print' });
    expect(await forPrint.isVisible(), 'the account name is printed').to.equal(true);
    for (const code of codes) expect(await page.getByText(code, { exact: true }).isVisible(), code).to.equal(true);
    for (const [what, hidden] of [
      ['the header', page.getByRole('banner')],
      ['the sidebar', page.getByRole('navigation', { name: 'Account settings' })],
      ['the heading', page.getByRole('heading', { name: 'Two-factor authentication is on' })],
      ['the warning', page.getByText('Save these recovery codes now.')],
      ['the buttons', page.getByRole('button', { name: 'Print' })],
      ['the footer', page.getByRole('link', { name: 'API reference' })],
    ] as const) expect(await hidden.isVisible(), `${what} is not printed`).to.equal(false);
  });
});
