import type { Context, Next } from 'koa';
import { noMetrics, type Metrics } from '../metrics.js';
import { kdfBusy, type KdfQueue } from '../services/passwords.js';
import { errorPageIn, errorsInEnglish } from '../error-page.js';
import { type Language, pageLanguage } from '../i18n.js';
import { renderPage } from './render.js';

/** The forms whose submission needs a password hash: the site's sign-in, sign-up and password reset, the flow's sign-in. */
const HASHING_FORMS = /^\/(login|signup|reset-password|interaction\/[^/]+\/login)$/;

/**
 * While this instance's hashing queue is full, a submitted sign-in or sign-up form is answered
 * 503 with Retry-After before its body is parsed, its session looked up or its page rendered:
 * under a flood of sign-ins most attempts are refused, and each refusal then costs as little as an
 * answer can (its page, in the reader's language, is rendered once per language), so the flood
 * takes little from token exchanges and API calls. (When the queue fills between this check and
 * the hash, the form's own handler gives the same answer on its page.)
 */
export function refuseHashingWhenBusy(kdf: KdfQueue, metrics: Pick<Metrics, 'signIn'> = noMetrics) {
  // The error page in each language asked for, rendered once; English when a sentence lacks a translation.
  const pages = new Map<Language, { body: string; lang: Language }>();
  return async function busyHashing(ctx: Context, next: Next): Promise<void> {
    if (ctx.method !== 'POST' || !HASHING_FORMS.test(ctx.path) || !kdf.full()) return next();
    const busy = kdfBusy();
    if (ctx.path !== '/signup' && ctx.path !== '/reset-password') metrics.signIn('busy');
    const asked = pageLanguage(ctx);
    let page = pages.get(asked);
    if (page === undefined) {
      const english = { title: errorsInEnglish('unavailable'), message: busy.message, status: 503 };
      const translated = errorPageIn(asked, english);
      const lang = translated ? asked : 'en';
      page = { body: renderPage('error', { ...(translated ?? english), lang }), lang };
      pages.set(asked, page);
    }
    ctx.set('Content-Language', page.lang);
    ctx.status = 503;
    ctx.type = 'html';
    ctx.set('Retry-After', String(busy.retryAfterS));
    ctx.set('Cache-Control', 'no-store');
    ctx.body = page.body;
  };
}
