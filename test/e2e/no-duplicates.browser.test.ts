import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { CALLBACK, makeGroup, makeUser } from '../helpers/factories.js';
import { launchChromium, signInThroughPage } from './support.js';

/**
 * What a person does to a creating form in a real browser: reload the page it led to, go Back and
 * send it again. Each creates once, and the secret or token shown once is never shown again.
 * And a form with several bad fields says what is wrong with each, at once.
 */
describeEachProfile('forms in a real browser: no duplicates, every error at once', function (profile) {
  this.timeout(60_000);
  const idp = useIdp(profile);
  let chromium: Browser;
  let context: BrowserContext;
  let page: Page;

  const count = async (table: string, where: Record<string, unknown>) =>
    Number(((await idp.db(table).where(where).count({ n: '*' }).first()) as { n: number | string }).n);

  before(async () => {
    chromium = await launchChromium();
  });
  beforeEach(async () => {
    context = await chromium.newContext();
    page = await context.newPage();
  });
  afterEach(() => context?.close());
  after(() => chromium?.close());

  async function ownerOfGroup() {
    const owner = await makeUser(idp.db);
    const group = await makeGroup(idp.db, owner.id, { name: 'Reload Works' });
    await signInThroughPage(page, idp.url, owner);
    return { owner, group };
  }

  it('creates one application whatever the reloads and Back + resubmit, and shows its secret only the first time', async () => {
    const { group } = await ownerOfGroup();
    const developer = `${idp.url}/groups/${group.path}/settings/developer`;
    await page.goto(`${developer}/apps/new`);
    await page.getByLabel('Application name').fill('Only Once');
    await page.getByLabel('Homepage URL').fill('https://once.example.test');
    await page.getByLabel('Authorization callback URL').fill(CALLBACK);
    const key = await page.locator('input[name="_once"]').inputValue();
    await page.getByRole('button', { name: 'Create', exact: true }).click();

    await page.getByTestId('client-secret').waitFor();
    const secret = (await page.getByTestId('client-secret').textContent())!.trim();
    const clientId = (await page.getByTestId('client-id').textContent())!.trim();
    // Post/Redirect/Get: the address bar holds the application's page, which answers a GET.
    expect(page.url()).to.equal(`${developer}/apps/${clientId}?notice=created`);

    await page.reload();
    await page.getByTestId('client-id').waitFor();
    expect(await page.getByTestId('client-secret').count()).to.equal(0);
    expect(await page.content()).not.to.include(secret);
    expect(await page.getByText('was shown once').isVisible()).to.equal(true);
    expect(await count('oauth_apps', { group_id: group.id })).to.equal(1);

    // Back to the form the browser kept, with the key it was sent with; filled in again (the fields
    // are not restored: autocomplete is off) and sent: the application that exists, no second one.
    await page.goBack();
    await page.getByRole('button', { name: 'Create', exact: true }).waitFor();
    expect(await page.locator('input[name="_once"]').inputValue()).to.equal(key);
    await page.getByLabel('Application name').fill('Only Once');
    await page.getByLabel('Homepage URL').fill('https://once.example.test');
    await page.getByLabel('Authorization callback URL').fill(CALLBACK);
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    await page.waitForURL(/notice=app-repeated/);
    expect(page.url()).to.equal(`${developer}/apps/${clientId}?notice=app-repeated`);
    expect(await page.getByTestId('client-secret').count()).to.equal(0);
    expect(await page.content()).not.to.include(secret);
    expect(await page.getByText('This form was submitted already').isVisible()).to.equal(true);
    expect(await count('oauth_apps', { group_id: group.id })).to.equal(1);

    // The address the form posts to answers a GET too: the list of applications.
    const list = await page.goto(`${developer}/apps`);
    expect(list!.status()).to.equal(200);
    expect(page.url()).to.equal(developer);
    expect(await page.getByRole('link', { name: 'Only Once' }).count()).to.equal(1);
  });

  it('creates one access token whatever the reloads and Back + resubmit, and shows it only the first time', async () => {
    const { owner } = await ownerOfGroup();
    const tokens = `${idp.url}/account/settings/tokens`;
    await page.goto(tokens);
    await page.getByLabel('Token name').fill('deploy script');
    await page.getByLabel(/groups:read-only/).check();
    const key = await page.locator('input[name="_once"]').inputValue();
    await page.getByRole('button', { name: 'Generate token' }).click();

    await page.getByTestId('new-token').waitFor();
    const token = (await page.getByTestId('new-token').textContent())!.trim();
    expect(token).to.match(/^ha_/);
    expect(page.url()).to.equal(`${tokens}?notice=token-created`);

    await page.reload();
    await page.getByTestId('token-row').first().waitFor();
    expect(await page.getByTestId('new-token').count()).to.equal(0);
    expect(await page.content()).not.to.include(token);
    expect(await count('personal_access_tokens', { user_id: owner.id })).to.equal(1);

    await page.goBack();
    await page.getByRole('button', { name: 'Generate token' }).waitFor();
    expect(await page.locator('input[name="_once"]').inputValue()).to.equal(key);
    await page.getByLabel('Token name').fill('deploy script');
    await page.getByLabel(/groups:read-only/).check();
    await page.getByRole('button', { name: 'Generate token' }).click();
    await page.waitForURL(/notice=token-repeated/);
    expect(await page.getByTestId('new-token').count()).to.equal(0);
    expect(await page.content()).not.to.include(token);
    expect(await page.getByTestId('token-row').count()).to.equal(1);
    expect(await count('personal_access_tokens', { user_id: owner.id })).to.equal(1);
  });

  it('shows every bad field of the new-application form at once, next to each, in the label’s words, keeping what was typed', async () => {
    const { group } = await ownerOfGroup();
    await page.goto(`${idp.url}/groups/${group.path}/settings/developer/apps/new`);
    await page.getByLabel('Homepage URL').fill('deploy.example.test');
    await page.getByLabel('Description').fill('Kept as typed');
    await page.getByLabel('Authorization callback URL').fill('http://deploy.example.test/callback');
    await page.getByRole('button', { name: 'Create', exact: true }).click();

    await page.locator('.field-error').first().waitFor();
    const errorOf = (name: string) => page.locator(`.field:has(#${name}) .field-error`).textContent();
    expect(await page.locator('.field-error').count()).to.equal(3);
    expect(await errorOf('name')).to.equal('Application name is required');
    expect(await errorOf('homepageURL')).to.equal('Homepage URL must be an absolute http(s) URL');
    expect(await errorOf('callbackURL')).to.equal('Authorization callback URL must use https (http only for localhost, 127.0.0.1 or [::1])');
    expect(await page.getByLabel('Homepage URL').inputValue()).to.equal('deploy.example.test');
    expect(await page.getByLabel('Description').inputValue()).to.equal('Kept as typed');
    expect(await page.getByLabel('Authorization callback URL').getAttribute('aria-invalid')).to.equal('true');
    expect(await count('oauth_apps', { group_id: group.id })).to.equal(0);

    // Corrected, the same form creates the application once.
    await page.getByLabel('Application name').fill('Fixed');
    await page.getByLabel('Homepage URL').fill('https://deploy.example.test');
    await page.getByLabel('Authorization callback URL').fill(CALLBACK);
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    await page.getByTestId('client-secret').waitFor();
    expect(await count('oauth_apps', { group_id: group.id })).to.equal(1);
  });
});
