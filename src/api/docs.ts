import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { VIEWS } from '../paths.js';

/**
 * The API's reference, rendered in the browser at /apis/v2/docs from /apis/v2/openapi.json by
 * Swagger UI (swagger-ui-dist), served from this origin: no CDN. Swagger UI needs no inline
 * script or style (its styles are one file and React sets the rest through the DOM), so the
 * page keeps the site's Content-Security-Policy; the page's one script is a file of ours.
 */
const SWAGGER_UI = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

/** The files the page loads, by their address under /static. */
export function apiDocsAssets(): Record<string, { type: string; body: Buffer }> {
  return {
    '/static/swagger-ui-bundle.js': { type: 'application/javascript', body: readFileSync(join(SWAGGER_UI, 'swagger-ui-bundle.js')) },
    '/static/swagger-ui.css': { type: 'text/css', body: readFileSync(join(SWAGGER_UI, 'swagger-ui.css')) },
    '/static/api-docs.js': { type: 'application/javascript', body: readFileSync(join(VIEWS, 'static', 'api-docs.js')) },
  };
}

export const API_DOCS_PAGE = readFileSync(join(VIEWS, 'api-docs.html'), 'utf8');
