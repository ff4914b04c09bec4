import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The repository's root: the nearest folder above this file with a package.json. The same code
 * runs from `src/` (tests, `npm run dev`) and from the compiled `dist/src/` (`npm start`), so
 * files that are not compiled (views, static assets) are found from here, not by relative hops.
 */
function findRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json above ${from}`);
  }
}

export const ROOT = findRoot(dirname(fileURLToPath(import.meta.url)));
export const VIEWS = join(ROOT, 'views');
/** The pages' words per language: `locales/<language>/<namespace>.json`, read once at startup. */
export const LOCALES = join(ROOT, 'locales');
