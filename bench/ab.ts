import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ROOT } from '../src/paths.js';
import { fmt } from './report.js';
import { median } from './stats.js';

/**
 * A change measured against a commit on a machine whose speed drifts by a third from one minute
 * to the next: `npm run bench` runs of the commit (a git worktree of `--base`, built there) and of
 * the working tree take turns, in the order A B B A A B …, so a drift weighs on both alike; the
 * table gives each scenario's rate and server CPU per request of every run, the ratio of each
 * scenario to `--ceiling` in the same run, and the medians.
 *
 *   npx tsx bench/ab.ts --base HEAD --rounds 4 -- --profile postgres+redis \
 *     --database-url postgres://postgres@127.0.0.1:5432/test --redis-url redis://127.0.0.1:6379 \
 *     --scenarios ceiling-io-page,api-ho --quick
 *
 * Everything after `--` goes to `npm run bench` as it is (plus --no-write). The worktree is removed
 * at the end; after an interrupted run, `git worktree prune` forgets it.
 */
const { values, positionals } = parseArgs({
  options: {
    base: { type: 'string', default: 'HEAD' },
    rounds: { type: 'string', default: '4' },
    ceiling: { type: 'string' },
  },
  allowPositionals: true,
});
const rounds = Number(values.rounds);
if (!Number.isInteger(rounds) || rounds < 1 || positionals.length === 0) {
  process.stderr.write('usage: npx tsx bench/ab.ts [--base <commit>] [--rounds 4] [--ceiling <scenario>] -- <npm run bench options>\n');
  process.exit(2);
}

interface Measured {
  rate: number;
  cpuMicros: number;
}

/** `[12 s]  postgres+redis api-ho: 1495.0 req/s, p50 …, server CPU 698 µs each, …` */
const LINE = /^\[\s*\d+ s\]\s+(\S+) (\S+): ([\d.]+) \S+, .*server CPU ([\d,]+) µs each/;

function build(dir: string): void {
  execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(dir, 'tsconfig.build.json')], { stdio: 'inherit' });
}

function runBench(dir: string): Map<string, Measured> {
  const run = spawnSync(process.execPath, [join(dir, 'dist/bench/run.js'), ...positionals, '--no-write'], { cwd: dir, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (run.status !== 0) throw new Error(`npm run bench failed in ${dir}:\n${run.stderr.slice(-2000)}`);
  const found = new Map<string, Measured>();
  for (const line of run.stdout.split('\n')) {
    const m = LINE.exec(line);
    if (m) found.set(`${m[1]} ${m[2]}`, { rate: Number(m[3]), cpuMicros: Number(m[4]!.replace(/,/g, '')) });
  }
  return found;
}

// The commit named once, as git understands it: a name that is no commit stops here.
const resolved = spawnSync('git', ['-C', ROOT, 'rev-parse', '--verify', '--quiet', '--end-of-options', `${values.base}^{commit}`], { encoding: 'utf8' });
if (resolved.status !== 0) {
  process.stderr.write(`--base ${JSON.stringify(values.base)}: no such commit in ${ROOT}\n`);
  process.exit(2);
}
const base = resolved.stdout.trim();
const tree = mkdtempSync(join(tmpdir(), 'idp-ab-'));
const baseDir = join(tree, 'base');
execFileSync('git', ['-C', ROOT, 'worktree', 'add', '--detach', baseDir, base], { stdio: 'inherit' });
try {
  if (!existsSync(join(baseDir, 'node_modules'))) symlinkSync(join(ROOT, 'node_modules'), join(baseDir, 'node_modules'));
  build(baseDir);
  build(ROOT);
  const runs: Record<'base' | 'work', Array<Map<string, Measured>>> = { base: [], work: [] };
  for (let round = 0; round < rounds; round += 1) {
    const order: Array<'base' | 'work'> = round % 2 === 0 ? ['base', 'work'] : ['work', 'base'];
    for (const side of order) {
      process.stdout.write(`round ${round + 1}/${rounds}: ${side === 'base' ? values.base : 'working tree'}…\n`);
      runs[side].push(runBench(side === 'base' ? baseDir : ROOT));
    }
  }

  const scenarios = [...new Set(runs.base.flatMap((r) => [...r.keys()]))];
  const ceilingOf = (key: string) => (values.ceiling ? `${key.split(' ')[0]} ${values.ceiling}` : undefined);
  process.stdout.write(`\n${values.base} (A) against the working tree (B), ${rounds} runs each, medians in bold\n\n`);
  process.stdout.write(`| scenario | A: server CPU µs | B: server CPU µs | A: rate | B: rate |${values.ceiling ? ` A: × ${values.ceiling} | B: × ${values.ceiling} |` : ''}\n`);
  process.stdout.write(`|---|---|---|---|---|${values.ceiling ? '---|---|' : ''}\n`);
  for (const key of scenarios) {
    const column = (side: 'base' | 'work', pick: (m: Measured, run: Map<string, Measured>) => number | undefined, digits = 0) => {
      const xs = runs[side].map((run) => { const m = run.get(key); return m ? pick(m, run) : undefined; });
      const known = xs.filter((x): x is number => x !== undefined);
      return known.length ? `${xs.map((x) => (x === undefined ? '—' : fmt(x, digits))).join(', ')} → **${fmt(median(known), digits)}**` : '—';
    };
    const toCeiling = (m: Measured, run: Map<string, Measured>) => {
      const ceiling = ceilingOf(key);
      const c = ceiling && ceiling !== key ? run.get(ceiling) : undefined;
      return c ? m.rate / c.rate : undefined;
    };
    const ratios = values.ceiling ? ` ${column('base', toCeiling, 2)} | ${column('work', toCeiling, 2)} |` : '';
    process.stdout.write(`| \`${key}\` | ${column('base', (m) => m.cpuMicros)} | ${column('work', (m) => m.cpuMicros)} | ${column('base', (m) => m.rate)} | ${column('work', (m) => m.rate)} |${ratios}\n`);
  }
} finally {
  execFileSync('git', ['-C', ROOT, 'worktree', 'remove', '--force', baseDir], { stdio: 'inherit' });
  rmSync(tree, { recursive: true, force: true });
}
