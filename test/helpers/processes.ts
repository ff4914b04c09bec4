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
