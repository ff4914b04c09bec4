import { CEILING_OF, type Row } from './scenarios.js';

/** The results table and the targets of the issue, as Markdown (printed and written to docs/benchmarks.md). */

export const fmt = (n: number, digits = 0) => (Number.isFinite(n) ? n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits }) : 'n/a');
export const ms = (n: number) => (Number.isFinite(n) ? (n >= 100 ? fmt(n) : fmt(n, 1)) : 'n/a');

function find(rows: Row[], profile: Row['profile'], scenario: Row['scenario']): Row | undefined {
  return rows.find((r) => r.profile === profile && r.scenario === scenario);
}

/** A scenario of ours over its ceiling as measured right before it, in the same profile's section. */
export function ratioOf(rows: Row[], row: Row): number | undefined {
  const ceilingName = CEILING_OF[row.scenario];
  const ceiling = ceilingName && find(rows, row.profile, ceilingName);
  return ceiling && ceiling.m.rate > 0 ? row.m.rate / ceiling.m.rate : undefined;
}

export function resultsTable(rows: Row[]): string {
  const lines = [
    '| profile | scenario | what | rate | p50 ms | p99 ms | errors | ratio to ceiling | server CPU µs each | RSS after MB | notes |',
    '|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|',
  ];
  for (const row of rows) {
    const ratio = row.scenario.startsWith('ceiling-') ? undefined : ratioOf(rows, row);
    const ceiling = CEILING_OF[row.scenario];
    lines.push(
      `| ${row.profile} | \`${row.scenario}\` | ${row.label} | ${fmt(row.m.rate, row.m.rate < 100 ? 1 : 0)} ${row.unit} | ${ms(row.m.p50)} | ${ms(row.m.p99)} | ${row.m.errors} | ` +
        `${ratio === undefined ? (row.scenario.startsWith('ceiling-') ? '—' : 'n/a') : `${ratio.toFixed(2)} × ${ceiling}`} | ${row.m.cpuMicros === undefined ? 'n/a' : fmt(row.m.cpuMicros)} | ${fmt(row.rssMB)} | ${row.note ?? ''} |`,
    );
  }
  return lines.join('\n');
}

/**
 * `--count-round-trips`: per request (or flow) of each scenario of ours, the Redis round trips
 * and commands and the SQL statements the service sent, then each statement that came at least
 * once in twenty requests, by its text.
 */
export function callsTable(rows: Row[]): string {
  const n = (x: number | undefined) => (x === undefined ? '0' : x >= 10 ? fmt(x, 1) : fmt(x, 2));
  const lines = [
    '| profile | scenario | Redis round trips | Redis commands | by command | SQL statements |',
    '|---|---|---:|---:|---|---:|',
  ];
  const statements: string[] = [];
  for (const row of rows) {
    const c = row.m.callsEach;
    if (!c) continue;
    const redis = Object.entries(c).filter(([k]) => k.startsWith('redis ') && k !== 'redis round trips');
    const per = row.unit === 'sign-ins/s' || row.unit === 'flows/s' ? ` (per ${row.unit.slice(0, -3)} of ${fmt(c['http requests'] ?? 0)} requests)` : '';
    const commands = redis.reduce((sum, [, v]) => sum + v, 0);
    const byCommand = redis.sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k.slice(6)} ${n(v)}`).join(', ');
    lines.push(`| ${row.profile} | \`${row.scenario}\`${per} | ${n(c['redis round trips'])} | ${n(commands)} | ${byCommand || '—'} | ${n(c['sql statements'])} |`);
    for (const [k, v] of Object.entries(c).sort((a, b) => b[1] - a[1])) {
      if (k.startsWith('sql ') && k !== 'sql statements' && v >= 0.05) {
        const text = k.slice(4);
        statements.push(`| ${row.profile} | \`${row.scenario}\` | ${n(v)} | \`${(text.length > 160 ? `${text.slice(0, 160)}…` : text).replace(/\|/g, '\\|')}\` |`);
      }
    }
  }
  return `${lines.join('\n')}\n\n| profile | scenario | each | SQL statement |\n|---|---|---:|---|\n${statements.join('\n')}`;
}

interface Verdict {
  target: string;
  measured: string;
  met: boolean | undefined;
}

export const mark = (met: boolean | undefined) => (met === undefined ? 'not measured' : met ? '**met**' : '**missed**');

/** The issue's targets, judged on one profile's rows (they are stated for PostgreSQL + Redis). */
export function targets(rows: Row[], profile: Row['profile']): Verdict[] {
  const out: Verdict[] = [];
  const get = (s: Row['scenario']) => find(rows, profile, s);
  const page = get('ceiling-io-page');
  for (const scenario of ['api-ho', 'api-ha'] as const) {
    const row = get(scenario);
    const ratio = row && ratioOf(rows, row);
    const toPage = row && page && page.m.rate > 0 ? row.m.rate / page.m.rate : undefined;
    out.push({
      target: `\`${scenario}\` ≥ 0.9 × ceiling-io-page and ≥ 0.6 × ceiling-io, p99 ≤ 25 ms, 0 errors`,
      measured: row ? `${toPage?.toFixed(2) ?? 'n/a'} × ceiling-io-page, ${ratio?.toFixed(2) ?? 'n/a'} × ceiling-io, p99 ${ms(row.m.p99)} ms, ${row.m.errors} errors` : '',
      met: row && ratio !== undefined && toPage !== undefined ? toPage >= 0.9 && ratio >= 0.6 && row.m.p99 <= 25 && row.m.errors === 0 : undefined,
    });
  }
  const exchange = get('exchange');
  for (const scenario of ['exchange', 'refresh'] as const) {
    const row = get(scenario);
    const ratio = row && ratioOf(rows, row);
    out.push({
      target: `\`${scenario}\` ≥ 0.6 × ceiling-oidc-exchange`,
      measured: row ? `${ratio?.toFixed(2) ?? 'n/a'} × (${fmt(row.m.rate)}/s), ${row.m.errors} errors` : '',
      met: row && ratio !== undefined ? ratio >= 0.6 && row.m.errors === 0 : undefined,
    });
  }
  const flow = get('flow');
  const flowRatio = flow && ratioOf(rows, flow);
  const noKdf = get('flow-no-kdf');
  const noKdfRatio = noKdf && ratioOf(rows, noKdf);
  out.push({
    target: '`flow-no-kdf` ≥ 0.4 × ceiling-oidc-flow',
    measured: noKdf
      ? `${noKdfRatio?.toFixed(2) ?? 'n/a'} × (${fmt(noKdf.m.rate, 1)}/s)` + (flow ? `; with the real KDF (\`flow\`, not a target): ${flowRatio?.toFixed(3) ?? 'n/a'} ×` : '')
      : '',
    met: noKdf && noKdfRatio !== undefined ? noKdfRatio >= 0.4 && noKdf.m.errors === 0 : undefined,
  });
  for (const [flooded, calm] of [['flood-api-ho', 'api-ho'], ['flood-exchange', 'exchange']] as const) {
    const under = get(flooded);
    const without = get(calm);
    const kept = under && without ? under.m.rate / without.m.rate : undefined;
    out.push({
      target: `a sign-in flood lowers \`${calm}\` by less than 25 %`,
      measured: under && without && kept !== undefined ? `${fmt(under.m.rate)}/s vs ${fmt(without.m.rate)}/s (${kept.toFixed(2)} ×), p99 ${ms(under.m.p99)} ms` : '',
      met: kept === undefined ? undefined : kept >= 0.75,
    });
  }
  const small = get('api-ho');
  const large = get('growth-groups');
  out.push({
    target: '`growth-groups` p50 ≤ 1.5 × `api-ho` p50',
    measured: small && large ? `${ms(large.m.p50)} ms vs ${ms(small.m.p50)} ms (${(large.m.p50 / small.m.p50).toFixed(2)} ×); rate ${(large.m.rate / small.m.rate).toFixed(2)} ×` : '',
    met: small && large ? large.m.p50 <= 1.5 * small.m.p50 : undefined,
  });
  const grown = get('growth-tokens');
  out.push({
    target: '`growth-tokens` (1M live tokens) ≥ 0.9 × `exchange`',
    measured: exchange && grown ? `${fmt(grown.m.rate)}/s vs ${fmt(exchange.m.rate)}/s (${(grown.m.rate / exchange.m.rate).toFixed(2)} ×)` : '',
    met: exchange && grown ? grown.m.rate >= 0.9 * exchange.m.rate : undefined,
  });
  const last = [...rows].reverse().find((r) => r.profile === profile && !r.scenario.startsWith('ceiling-'));
  out.push({
    target: 'RSS ≤ 256 MB after the whole run',
    measured: last ? `${fmt(last.rssMB)} MB (after \`${last.scenario}\`)` : '',
    met: last ? last.rssMB <= 256 : undefined,
  });
  const first = get('api-ho');
  const again = get('api-ho-repeat');
  out.push({
    target: 'no memory growth across the repeated API run',
    measured:
      first && again
        ? `RSS ${fmt(first.rssMB)} → ${fmt(again.rssMB)} MB; live heap after GC ${fmt(first.heapMB, 1)} → ${fmt(again.heapMB, 1)} MB`
        : '',
    // Growth is judged on the live heap after a full GC; RSS is shown, within 5 % as well.
    met: first && again ? again.heapMB <= first.heapMB * 1.05 + 1 && again.rssMB <= first.rssMB * 1.05 : undefined,
  });
  return out;
}

export function targetsTable(verdicts: Verdict[]): string {
  return ['| target | measured | |', '|---|---|---|', ...verdicts.map((v) => `| ${v.target} | ${v.measured || '—'} | ${mark(v.met)} |`)].join('\n');
}
