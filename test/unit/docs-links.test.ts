import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The README, SECURITY.md and every page under docs/, as paths from the repository's root. */
function pages(): string[] {
  const docs = readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`);
  return ['README.md', 'SECURITY.md', ...docs];
}

/** The page's lines outside fenced code blocks, where a `#` starts a comment, not a heading. */
function prose(markdown: string): string[] {
  let fenced = false;
  return markdown.split('\n').filter((line) => {
    if (line.startsWith('```')) fenced = !fenced;
    return !fenced && !line.startsWith('```');
  });
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
function slug(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N}_\- ]/gu, '').replace(/ /g, '-');
}

/** The anchors of a page's headings; a repeated heading gets -1, -2… as on GitHub. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const found = new Set<string>();
  for (const line of prose(markdown)) {
    const heading = /^#{1,6} (.*)$/.exec(line);
    if (!heading) continue;
    const base = slug(heading[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    found.add(n === 0 ? base : `${base}-${n}`);
  }
  return found;
}

/** Every relative link target of a page: `[text](target)` outside code blocks. */
function relativeLinks(markdown: string): string[] {
  const targets = prose(markdown).flatMap((line) => [...line.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!));
  return targets.filter((t) => !/^[a-z][a-z0-9+.-]*:/i.test(t));
}

describe('the README and docs/ links', () => {
  for (const page of pages()) {
    it(`${page}: every relative link names a file that exists and, with #, a heading in it`, () => {
      const text = readFileSync(join(ROOT, page), 'utf8');
      const broken: string[] = [];
      for (const target of relativeLinks(text)) {
        const [path, anchor] = target.split('#') as [string, string | undefined];
        const file = path === '' ? join(ROOT, page) : join(ROOT, dirname(page), decodeURIComponent(path));
        if (!existsSync(file)) {
          broken.push(`${target} (no ${relative(ROOT, file)})`);
        } else if (anchor !== undefined && file.endsWith('.md') && !anchors(readFileSync(file, 'utf8')).has(anchor)) {
          broken.push(`${target} (no heading #${anchor} in ${relative(ROOT, file)})`);
        }
      }
      expect(broken).to.deep.equal([]);
    });
  }

  it('finds the links it checks (a README without any would pass vacuously)', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    expect(relativeLinks(readme)).to.include('docs/configuration.md');
    expect(anchors('# The API (`/apis/v2`)\n## Signing out (RP-initiated logout)\n## A\n## A')).to.deep.equal(
      new Set(['the-api-apisv2', 'signing-out-rp-initiated-logout', 'a', 'a-1']),
    );
  });
});
