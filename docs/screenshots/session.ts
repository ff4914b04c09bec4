import type { Browser } from 'playwright-core';
import { startIdp, type RunningIdp } from '../../test/helpers/app.js';
import { launchChromium } from '../../test/e2e/support.js';

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
