import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { TEST_DATABASE_POOLING } from './db.js';
import { nodeArgsFor } from './processes.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the real CLI in a child process against `url`, with `stdin` piped in and `env` added to the
 * environment. A PostgreSQL `url` is a test database, reached as TEST_DATABASE_POOLING says.
 */
export function idp(url: string, args: string[], stdin = '', env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [...nodeArgsFor('src/cli/index.ts'), ...args], { cwd: ROOT, env: { ...process.env, DATABASE_URL: url, ...(url.startsWith('sqlite:') ? {} : { DATABASE_POOLING: TEST_DATABASE_POOLING }), ...env } }, (err, stdout, stderr) =>
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : null) : 0, stdout, stderr }),
    );
    child.stdin!.on('error', () => {}); // the CLI may exit before reading what we pipe
    child.stdin!.end(stdin);
  });
}

/** A successful `--json` run: exit 0, nothing on stderr, one JSON object on stdout. */
export function json(run: Run): Record<string, unknown> {
  expect(run.stderr, 'stderr').to.equal('');
  expect(run.code, 'exit code').to.equal(0);
  expect(run.stdout.trimEnd().split('\n'), 'stdout lines').to.have.length(1);
  return JSON.parse(run.stdout) as Record<string, unknown>;
}

/** A refused run: exit 2, nothing on stdout, exactly one `idp: …` line on stderr, returned. */
export function refusal(run: Run): string {
  expect(run.stdout, 'stdout').to.equal('');
  expect(run.code, `exit code (stderr: ${run.stderr})`).to.equal(2);
  expect(run.stderr).to.match(/^idp: [^\n]+\n$/);
  return run.stderr.trimEnd();
}
