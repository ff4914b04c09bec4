import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

/**
 * Where a CPU profile's time went: `npx tsx bench/cpu-top.ts <file.cpuprofile> [--top 25]`
 * prints self time by function and by package (or source file of ours), from the V8 profiles
 * that `npm run bench -- --cpu-prof` writes to bench/profiles/.
 */
interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount: number;
  children?: number[];
}

const { values, positionals } = parseArgs({
  options: { top: { type: 'string', default: '25' }, callers: { type: 'string' }, skip: { type: 'string', default: '0' }, until: { type: 'string' } },
  allowPositionals: true,
});
const file = positionals[0];
if (!file) {
  process.stderr.write('usage: npx tsx bench/cpu-top.ts <file.cpuprofile> [--top 25] [--callers <function name>] [--skip <seconds of start-up>] [--until <seconds>]\n');
  process.exit(2);
}
const profile = JSON.parse(readFileSync(file, 'utf8')) as { nodes: Node[]; samples: number[]; timeDeltas: number[] };
const top = Number(values.top);

// --skip leaves out the first seconds (module loading, migrations, key generation); --until the
// samples after that many seconds from the start (to read one scenario of a profile of several).
const until = values.until === undefined ? Infinity : Number(values.until) * 1e6;
const selfMicros = new Map<number, number>();
let elapsed = 0;
profile.samples.forEach((id, i) => {
  elapsed += profile.timeDeltas[i] ?? 0;
  if (elapsed >= Number(values.skip) * 1e6 && elapsed < until) selfMicros.set(id, (selfMicros.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
});
const total = [...selfMicros.values()].reduce((a, b) => a + b, 0);

function where(url: string): string {
  if (!url) return '(native / V8)';
  const modules = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (modules) return modules[1]!;
  if (url.startsWith('node:')) return url;
  const ours = /\/work\/[^/]+\/(.*)$/.exec(url) ?? /file:\/\/.*?\/((?:src|adapters|bench)\/.*)$/.exec(url);
  return ours ? ours[1]! : url;
}

const byFunction = new Map<string, number>();
const byPlace = new Map<string, number>();
for (const node of profile.nodes) {
  const micros = selfMicros.get(node.id) ?? 0;
  if (!micros) continue;
  const { functionName, url, lineNumber } = node.callFrame;
  const place = where(url);
  const key = `${functionName || '(anonymous)'}  ${place}${url ? `:${lineNumber + 1}` : ''}`;
  byFunction.set(key, (byFunction.get(key) ?? 0) + micros);
  byPlace.set(place, (byPlace.get(place) ?? 0) + micros);
}

const print = (title: string, entries: Map<string, number>) => {
  process.stdout.write(`\n${title}\n`);
  for (const [key, micros] of [...entries].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    process.stdout.write(`${((100 * micros) / total).toFixed(1).padStart(5)} %  ${(micros / 1000).toFixed(0).padStart(7)} ms  ${key}\n`);
  }
};
process.stdout.write(`${file}: ${(total / 1e6).toFixed(1)} s sampled\n`);
print('self time by package / file', byPlace);
print('self time by function', byFunction);

// --callers: whose calls a function's self time comes from (the nearest frames of ours or a package's).
if (values.callers) {
  const parent = new Map<number, Node>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node);
  const chains = new Map<string, number>();
  for (const node of profile.nodes) {
    if (node.callFrame.functionName !== values.callers) continue;
    const micros = selfMicros.get(node.id) ?? 0;
    if (!micros) continue;
    const frames: string[] = [];
    for (let p = parent.get(node.id); p && frames.length < 12; p = parent.get(p.id)) {
      frames.push(`${p.callFrame.functionName || '(anonymous)'}@${where(p.callFrame.url)}`);
    }
    const key = frames.join(' < ');
    chains.set(key, (chains.get(key) ?? 0) + micros);
  }
  print(`callers of ${values.callers}`, chains);
}
