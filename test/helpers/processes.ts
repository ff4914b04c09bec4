import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ChildProcess } from 'node:child_process';

/**
 * Stops a server a test started: SIGTERM, and SIGKILL if it is still there after `graceMs`;
 * resolves once it has exited (so its ports are free), leaving no timer behind.
 */
export async function stopChild(child: ChildProcess, graceMs = 5000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([gone, new Promise((resolve) => (timer = setTimeout(resolve, graceMs)))]);
  clearTimeout(timer);
  if (child.exitCode === null && child.signalCode === null) {
    child.kill('SIGKILL');
    await gone;
  }
}

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * The node arguments that run one of the service's sources (`src/index.ts`, `src/cli/index.ts`):
 * through tsx, or, with TEST_RUN_BUILD=1, its compiled file under dist/ as `npm start` and
 * `npm run idp` run it. CI sets it right after `npm run build`, so the code is the same and each
 * start skips compiling it (a few seconds on a small machine, for each of the hundreds of `idp`
 * runs); a missing build fails the test, saying so, rather than running something else. Other
 * scripts (tests' own helpers, scripts/) always run through tsx.
 */
export function nodeArgsFor(source: string): string[] {
  if (process.env.TEST_RUN_BUILD !== '1' || !/^src\/.*\.ts$/.test(source)) return ['--import', 'tsx', source];
  const compiled = `dist/${source.replace(/\.ts$/, '.js')}`;
  if (!existsSync(join(ROOT, compiled))) throw new Error(`TEST_RUN_BUILD=1 but ${compiled} is missing: run npm run build first`);
  return [compiled];
}
