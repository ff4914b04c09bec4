import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Page } from 'playwright-core';
import { linkIn, type MailServer } from '../helpers/smtp.js';

/**
 * What the browser tests (and docs/screenshots/take.ts) share: the system's Chromium driven by
 * playwright-core (no browser is ever downloaded), and signing in through the real page.
 */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
}

/**
 * After the sign-up form was sent on `page`: waits for its "Check your inbox", opens the link
 * mailed to `email` in the same page and enters the password chosen, as a person finishes a
 * sign-up; ends on the page that leads to (the flow's next step, or /groups).
 */
export async function finishSignUpFromMail(page: Page, smtp: MailServer, base: string, email: string, password: string): Promise<void> {
  await page.getByRole('heading', { name: 'Check your inbox' }).waitFor();
  await page.goto(linkIn(await smtp.next(email), base).toString());
  await page.getByLabel('Password').fill(password);
  await Promise.all([page.waitForURL((url) => url.pathname !== '/signup/confirm'), page.getByRole('button', { name: 'Create account' }).click()]);
}

/** Signs in on /login by the form's visible labels; ends on the page the sign-in leads to (/groups). */
export async function signInThroughPage(page: Page, base: string, user: { username: string; password: string }): Promise<void> {
  await page.goto(`${base}/login`);
  await page.getByLabel('Username or email').fill(user.username);
  await page.getByLabel('Password').fill(user.password);
  await Promise.all([page.waitForURL(`${base}/groups`), page.getByRole('button', { name: 'Sign in', exact: true }).click()]);
}

/**
 * The suite's Chromium: launched before its tests and closed after them. `newPage` opens a page
 * in a browser profile of its own (its own cookies, as another computer has), closed after each test.
 */
export function useChromium() {
  let chromium: Browser | undefined;
  const contexts: BrowserContext[] = [];
  before(async () => {
    chromium = await launchChromium();
  });
  afterEach(async () => {
    await Promise.all(contexts.splice(0).map((context) => context.close()));
  });
  after(async () => {
    await chromium?.close();
  });
  return {
    async newPage(options: BrowserContextOptions = {}): Promise<Page> {
      const context = await chromium!.newContext(options);
      contexts.push(context);
      return context.newPage();
    },
  };
}
