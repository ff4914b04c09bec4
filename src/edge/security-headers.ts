import type { Context, Next } from 'koa';
import { surfaceOf } from './surface.js';

/**
 * The headers every response carries. The Content-Security-Policy allows no inline script or
 * style (every page's script and style are files under /static), no framing, no plugins and no
 * <base>. `script-src` is spelled out because oidc-provider adds the digest of its form_post
 * page's one inline script to an existing `script-src` (lib/helpers/script_src_sha.js).
 *
 * `form-action` also governs where a submitted form's redirects may go. Our own pages post to
 * themselves; the provider's pages post to the application's callback (form_post); the sign-in
 * and consent steps of a flow post here and are then redirected to the callback, so those pages
 * add the callback's origin (allowFormActionTo).
 */
const BASE_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "frame-ancestors 'none'",
  "object-src 'none'",
  "base-uri 'none'",
];

function policy(formAction: string[] | undefined): string {
  return (formAction ? [...BASE_POLICY, `form-action ${formAction.join(' ')}`] : BASE_POLICY).join('; ');
}

// Built once: these headers go out on every response.
const OAUTH_POLICY = policy(undefined);
const SITE_POLICY = policy(["'self'"]);

export function securityHeaders(issuer: string) {
  const hsts = issuer.startsWith('https://');
  return async function setSecurityHeaders(ctx: Context, next: Next): Promise<void> {
    // Straight onto the response: nothing is sent yet, and Koa's ctx.set builds arrays per call.
    const { res } = ctx;
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('X-Frame-Options', 'DENY');
    res.setHeader('Referrer-Policy', 'no-referrer');
    // One year; without includeSubDomains, which would bind every other site of the domain too.
    if (hsts) res.setHeader('Strict-Transport-Security', 'max-age=31536000');
    res.setHeader('Content-Security-Policy', surfaceOf(ctx.path) === 'oauth' ? OAUTH_POLICY : SITE_POLICY);
    await next();
    const extra = ctx.state.formActionSources as string[] | undefined;
    if (extra?.length && !ctx.headerSent) ctx.set('Content-Security-Policy', policy(["'self'", ...extra]));
  };
}

/** Lets this page's forms (and the redirects after them) reach the origin of `url`, an application's callback. */
export function allowFormActionTo(ctx: Context, url: unknown): void {
  if (typeof url !== 'string') return;
  let source: string;
  try {
    const parsed = new URL(url);
    source = parsed.protocol === 'http:' || parsed.protocol === 'https:' ? parsed.origin : parsed.protocol;
  } catch {
    return;
  }
  // A CSP source list is split on spaces and semicolons; a URL's origin holds neither, but be sure.
  if (/[\s;,']/.test(source)) return;
  ctx.state.formActionSources = [...((ctx.state.formActionSources as string[] | undefined) ?? []), source];
}
