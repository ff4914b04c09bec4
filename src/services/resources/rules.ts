import { z } from 'zod';
import { RESERVED_SCOPES, TOKEN_FORMATS } from '../../vocabulary.js';

export const MAX_IDENTIFIER_LENGTH = 500;
export const MAX_SCOPES = 30;
/** RFC 6749's scope characters, less the ones that read badly on a page: letters, digits and `_ . : / -`. */
const SCOPE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,63}$/;
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * What is wrong with a resource identifier, or undefined. RFC 8707 §2: an absolute URI without a
 * fragment, and no query. It is `https`, or `http` on a loopback host for a server being
 * developed on the same machine.
 */
export function identifierProblem(value: string): string | undefined {
  const url = URL.parse(value);
  if (!url || !value.includes('://')) return 'must be an absolute URL, such as https://tools.example.com/mcp';
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname))) {
    return 'must be an https:// URL (http:// only on localhost, 127.0.0.1 or [::1])';
  }
  if (url.username || url.password) return 'must not contain a user name or password';
  if (url.hash || value.includes('#')) return 'must not contain a fragment (#…)';
  if (url.search || value.includes('?')) return 'must not contain a query (?…)';
  return undefined;
}

const identifier = z
  .string({ error: 'identifier is required' })
  .trim()
  .min(1, 'identifier is required')
  .max(MAX_IDENTIFIER_LENGTH, `identifier must be at most ${MAX_IDENTIFIER_LENGTH} characters`)
  .superRefine((v, ctx) => {
    const problem = identifierProblem(v);
    if (problem) ctx.addIssue({ code: 'custom', message: `identifier ${problem}` });
  })
  // Stored as the URL's normal form, which is what clients send (https://tools.example.com → …/).
  .transform((v) => new URL(v).href)
  .describe('The resource indicator (RFC 8707) clients send as `resource`: the server\'s URL, https:// (http:// only on a loopback host), with no query or fragment; unique on the site, and the `aud` of its tokens')
  .meta({ format: 'uri' });

const name = z
  .string({ error: 'name is required' })
  .trim()
  .min(1, 'name is required')
  .max(100, 'name must be at most 100 characters')
  .describe('What the consent page calls the resource');

const scope = z.strictObject({
  name: z
    .string({ error: 'scopes[].name is required' })
    .trim()
    .regex(SCOPE_NAME, 'scopes[].name must be 1 to 64 letters, digits or _ . : / - (starting with a letter or digit)')
    .refine((v) => !RESERVED_SCOPES.has(v), { message: 'scopes[].name must not be one of the service\'s own scopes (openid, profile, email, groups:…)' })
    .describe('The scope as a client asks for it; not one of the service\'s own (openid, profile, email, groups:…)'),
  description: z
    .string({ error: 'scopes[].description is required' })
    .trim()
    .min(1, 'scopes[].description is required')
    .max(200, 'scopes[].description must be at most 200 characters')
    .regex(/^[^\r\n]*$/, 'scopes[].description must be one line')
    .describe('What the consent page says the scope lets an application do'),
}, { error: 'scopes must be a list of { name, description }' });

const scopes = z
  .array(scope, { error: 'scopes must be a list of { name, description }' })
  .min(1, 'scopes must name at least one scope')
  .max(MAX_SCOPES, `scopes must name at most ${MAX_SCOPES} scopes`)
  .superRefine((list, ctx) => {
    const names = list.map((s) => s.name);
    const repeated = names.find((n, i) => names.indexOf(n) !== i);
    if (repeated) ctx.addIssue({ code: 'custom', message: `scopes names ${repeated} twice` });
  })
  .describe('The scopes the resource defines: a client asks for them with `resource`, and its token carries those granted');

const tokenFormat = z
  .enum(TOKEN_FORMATS, { error: 'tokenFormat must be opaque or jwt' })
  .describe('`opaque`: an `ho_` token the resource\'s server introspects with its credentials. `jwt`: an RFC 9068 JWT access token (`typ: at+jwt`, `aud` the identifier) verified with the JWKS.');

/** A new resource; an unknown field is an error. */
export const newResource = z.strictObject({ identifier, name, scopes, tokenFormat: tokenFormat.default('opaque') });

/** An edit names only what it changes. */
export const resourceChanges = z.strictObject({ identifier: identifier.optional(), name: name.optional(), scopes: scopes.optional(), tokenFormat: tokenFormat.optional() });
