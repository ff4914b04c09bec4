import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { freePort, listen } from '../helpers/app.js';
import type { Run } from '../helpers/cli.js';
import { nodeArgsFor } from '../helpers/processes.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Node's own notice on runtimes oidc-provider does not list; not the server's output. */
const RUNTIME_NOTICE = /^oidc-provider WARNING: Unsupported runtime.*$/gm;

/** Runs `script` (the server's entry point, or the demo), as nodeArgsFor says. */
function run(script: string, args: string[], env: Record<string, string>, until?: (output: string) => boolean): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeArgsFor(script), ...args], {
      cwd: ROOT,
      env: { ...process.env, LOG_LEVEL: 'info', NODE_ENV: 'development', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    const check = () => {
      if (until?.(stdout + stderr)) child.kill('SIGTERM');
    };
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => ((stdout += chunk), check()));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => ((stderr += chunk), check()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr: stderr.replace(RUNTIME_NOTICE, '').trim() }));
  });
}

describe('Start-up', function () {
  this.timeout(60_000);

  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'idp-startup-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));
  const env = (more: Record<string, string>) => ({ DATABASE_URL: `sqlite:${join(dir, 'idp.sqlite3')}`, MAIL_DIR: join(dir, 'mail'), ...more });

  it('on a busy port prints one line naming the port and exits 1, without a stack trace', async () => {
    const busy = await listen();
    try {
      const port = new URL(busy.url).port;
      const result = await run('src/index.ts', [], env({ PORT: port }));
      expect(result.code).to.equal(1);
      expect(result.stderr).to.equal(`idp: cannot listen on 127.0.0.1:${port}: port ${port} is in use (another server, or an earlier npm start, is running: stop it, or set PORT)`);
      expect(result.stdout).not.to.match(/EADDRINUSE|Unhandled 'error' event|\n\s+at /);
    } finally {
      await busy.close();
    }
  });

  it('on an address the machine does not have prints one line naming HOST and exits 1', async () => {
    const port = String(await freePort());
    for (const host of ['192.0.2.1', 'no-such-host.invalid']) {
      const result = await run('src/index.ts', [], env({ PORT: port, HOST: host }));
      expect(result.code, result.stderr).to.equal(1);
      expect(result.stderr.split('\n'), result.stderr).to.have.length(1);
      expect(result.stderr).to.match(new RegExp(`^idp: cannot listen on ${host.replace(/\./g, '\\.')}:${port}: .*HOST`));
    }
  });

  it('tells a newcomer in development which address to open, beside the JSON log', async () => {
    const port = String(await freePort());
    const result = await run('src/index.ts', [], env({ PORT: port }), (output) => output.includes('identity provider started') && output.includes('Open '));
    expect(result.stderr).to.include(`Open http://localhost:${port} in a browser`);
    const started = result.stdout.split('\n').filter(Boolean).map((line) => JSON.parse(line) as { msg: string }).find((line) => line.msg === 'identity provider started');
    expect(started, result.stdout).to.not.equal(undefined);
  });

  it('npm run demo -- --help prints its usage and starts nothing', async () => {
    const result = await run('scripts/demo.ts', ['--help'], env({}));
    expect(result.code).to.equal(0);
    expect(result.stdout).to.match(/^Usage: npm run demo/).and.to.include('EXAMPLE_PORT');
    const unknown = await run('scripts/demo.ts', ['--bogus'], env({}));
    expect(unknown.code).to.equal(1);
    expect(unknown.stderr).to.equal('demo: unknown option --bogus (npm run demo -- --help lists what there is)');
  });
});
