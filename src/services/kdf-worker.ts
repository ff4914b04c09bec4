import { hashPasswordSync, verifyPasswordSync, type KdfTask } from './passwords.js';

/**
 * One hash on a low-priority worker thread (see kdfQueue): computed synchronously, so the work
 * stays on this thread and its scheduling priority.
 */
export default function kdfTask(task: KdfTask): string | boolean {
  return task.op === 'hash' ? hashPasswordSync(task.password) : verifyPasswordSync(task.password, task.stored);
}
