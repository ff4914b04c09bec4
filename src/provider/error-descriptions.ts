import type { Context, Next } from 'koa';

/**
 * Every OAuth error this service answers carries `error_description` beside `error`, as its
 * clients are promised. oidc-provider leaves it out for a few errors it throws without words
 * (a `request` object, a `request_uri` where none is taken, the `registration` parameter); this
 * step, around the library's routes, adds them wherever the error goes back to the client: in a
 * JSON body, in the redirect's query or fragment, or in a form_post page.
 */
const DESCRIPTIONS: Record<string, string> = {
  request_not_supported: 'the request parameter (a request object) is not supported',
  request_uri_not_supported: 'request_uri is taken only at the authorization endpoint, and only as the request_uri of a pushed authorization request (POST /login/oauth/par)',
  registration_not_supported: 'the registration parameter is not supported',
};

function describe(error: string): string {
  return DESCRIPTIONS[error] ?? error.replace(/_/g, ' ');
}

export async function errorsWithDescriptions(ctx: Context, next: Next): Promise<void> {
  await next();
  if (ctx.status < 300) return;
  const body: unknown = ctx.body;
  if (body && typeof body === 'object' && !Buffer.isBuffer(body) && !('pipe' in body)) {
    const json = body as Record<string, unknown>;
    if (typeof json.error === 'string' && json.error_description === undefined) ctx.body = { ...json, error_description: describe(json.error) };
    return;
  }
  const location = ctx.response.get('Location');
  if (location && ctx.status < 400) {
    if (location.includes('error=')) ctx.set('Location', withDescription(location));
    return;
  }
  if (typeof body === 'string' && body.includes('<input type="hidden" name="error" ') && !body.includes('name="error_description"')) {
    // form_post: the library writes each parameter as `<input type="hidden" name="…" value="…"/>`.
    ctx.body = body.replace(/<input type="hidden" name="error" value="([a-z_]+)"\/>/, (input, error: string) => `${input}\n<input type="hidden" name="error_description" value="${escapeAttribute(describe(error))}"/>`);
  }
}

/**
 * The redirect's URL with error_description written after an error that has none, in the query
 * and in the fragment; the rest of the URL (the client's own callback) is left byte for byte.
 */
function withDescription(location: string): string {
  const hashAt = location.indexOf('#');
  const [main, fragment] = hashAt === -1 ? [location, ''] : [location.slice(0, hashAt), location.slice(hashAt)];
  return `${describedIn(main)}${describedIn(fragment)}`;
}

function describedIn(part: string): string {
  if (/[?&#]error_description=/.test(part)) return part;
  return part.replace(/[?&#]error=([a-z_]+)(?=&|$)/, (parameter, error: string) => `${parameter}&error_description=${encodeURIComponent(describe(error))}`);
}

function escapeAttribute(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
