import { fork, type ChildProcess } from 'node:child_process';
import { openSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FromServer, ServerSpec, ToServer } from './server.js';

export interface RunningTarget {
  url: string;
  pid: number;
  /** RSS now, and the live heap after a full GC, in bytes. */
  memory(): Promise<{ rss: number; heapUsed: number }>;
  /** CPU time the process has used so far (user + system), in µs. */
  cpu(): Promise<number>;
  /** Redis commands and SQL statements sent so far, by kind (a server started with `countCalls`; empty otherwise). */
  calls(): Promise<Record<string, number>>;
  stop(): Promise<void>;
}

// `npm run bench` runs the compiled build (dist/bench), as `npm start` does; `npx tsx bench/run.ts`
// runs the sources, and the server follows whichever this file is.
const COMPILED = import.meta.url.endsWith('.js');
const SERVER = fileURLToPath(new URL(COMPILED ? './server.js' : './server.ts', import.meta.url));

/**
 * Starts a server under test in its own process. Its stdout and stderr (the service's JSON logs
 * at the chosen level) go to `logFile`, so logging costs what it costs in production without
 * flooding the terminal. With `cpuProfileDir`, the process writes a V8 CPU profile there on stop.
 */
export async function startTarget(spec: ServerSpec, options: { logFile: string; cpuProfileDir?: string }): Promise<RunningTarget> {
  const log = openSync(options.logFile, 'a');
  const execArgv = [...(COMPILED ? [] : ['--import', 'tsx']), '--expose-gc', '--no-warnings=ExperimentalWarning'];
  // V8's default names (CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile): the main thread's
  // profile is the one with the server; under tsx its loader thread writes a (nearly idle) one too.
  if (options.cpuProfileDir) execArgv.push('--cpu-prof', `--cpu-prof-dir=${join(options.cpuProfileDir, spec.kind)}`);
  const child = fork(SERVER, [JSON.stringify(spec)], {
    execArgv,
    stdio: ['ignore', log, log, 'ipc'],
    env: { ...process.env, NODE_ENV: 'production' },
  });
  closeSync(log);

  const url = await new Promise<string>((resolve, reject) => {
    const onExit = (code: number | null) => reject(new Error(`the ${spec.kind} server exited with ${code} before it was ready (see ${options.logFile})`));
    child.once('exit', onExit);
    child.once('message', (message: FromServer) => {
      child.off('exit', onExit);
      if (message.type === 'ready') resolve(message.url);
      else reject(new Error(`unexpected message ${JSON.stringify(message)}`));
    });
  });

  return {
    url,
    pid: child.pid!,
    memory: () => ask(child, { type: 'memory' }).then((m) => m as { rss: number; heapUsed: number }),
    cpu: () => ask(child, { type: 'cpu' }).then((m) => (m as { micros: number }).micros),
    calls: () => ask(child, { type: 'calls' }).then((m) => (m as { calls: Record<string, number> }).calls),
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.send({ type: 'stop' } satisfies ToServer);
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

function ask(child: ChildProcess, message: ToServer): Promise<Omit<FromServer, 'type'>> {
  return new Promise((resolve) => {
    child.once('message', (reply: FromServer) => resolve(reply));
    child.send(message);
  });
}
