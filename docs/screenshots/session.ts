import type { Browser } from 'playwright-core';
import { startIdp, type RunningIdp } from '../../test/helpers/app.js';
import { launchChromium } from '../../test/e2e/support.js';

/** The two sizes most pages are shown at: 1200 px, and a 390 px phone (`-phone` after the file name). */
export const DESKTOP_AND_PHONE = [
  { suffix: '', viewport: { width: 1200, height: 720 } },
  { suffix: '-phone', viewport: { width: 390, height: 844 } },
];

/** The actor a script's setup acts as: the command line, as a site administrator (audited `via: cli`). */
export const CLI = { userId: 0, ip: null, admin: true };

/**
 * What every screenshot script does around its pages: a real server on a throwaway SQLite
 * database (`env` as startIdp takes it) and the system's Chromium, both closed at the end, and a
 * failure reported with exit status 1.
 */
export function takeScreenshots(shoot: (idp: RunningIdp, chromium: Browser) => Promise<void>, env: Record<string, string> = {}): void {
  const run = async () => {
    const idp = await startIdp('sqlite', env);
    const chromium = await launchChromium();
    try {
      await shoot(idp, chromium);
    } finally {
      await chromium.close();
      await idp.stop();
    }
  };
  run().catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  });
}
