import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ejs from 'ejs';
import type { Context } from 'koa';
import { VIEWS } from '../paths.js';
import { errorPageIn, PAGES_OF_MESSAGES } from '../error-page.js';
import { formatDate, type Language, pageLanguage, translateHtml, translateMessage, translator } from '../i18n.js';

const templates = new Map<string, ejs.TemplateFunction>();

function template(view: string): ejs.TemplateFunction {
  let fn = templates.get(view);
  if (!fn) {
    const filename = join(VIEWS, `${view}.ejs`);
    // cache: the partials a page includes are compiled once too, not on every render. Views name
    // their partials from views/ (`include('/_field')`): ejs resolves those against `root` alone,
    // where a relative include costs a file-system lookup (existsSync) on every render.
    fn = ejs.compile(readFileSync(filename, 'utf8'), { filename, root: VIEWS, cache: true });
    templates.set(view, fn);
  }
  return fn;
}

export interface PageLocals {
  title: string;
  [key: string]: unknown;
}

/**
 * `views/<view>.ejs` inside `views/layout.ejs`. Every value is escaped by `<%= %>`; pages get the
 * signed-in user (for the header) and the CSRF token (for every form), and the page's language:
 * `lang`, `t` bound to it (`tHtml` for the few sentences with markup around a value, which it
 * escapes) and `formatDate`. Without `lang`, the page is English.
 */
export function renderPage(view: string, locals: PageLocals & { currentUser?: unknown; csrfToken?: string; lang?: Language }): string {
  const lang = locals.lang ?? 'en';
  const t = translator(lang);
  const words = { lang, t, tHtml: (key: string, values?: Record<string, unknown>) => translateHtml(lang, key, values), formatDate: (date: Date) => formatDate(date, lang) };
  const all = { currentUser: null, csrfToken: '', values: {}, errors: {}, labels: {}, onceKey: '', flash: null, ...locals, ...words };
  return template('layout')({ ...all, body: template(view)(all) });
}

/**
 * A page in the reader's language when `view` is translated (i18n.ts), English otherwise. The
 * messages beside its fields come from the services in English: they are translated here.
 */
export function render(ctx: Context, view: string, pageLocals: PageLocals, status = 200): void {
  const { lang, locals } = inPageLanguage(ctx, view, pageLocals);
  ctx.status = status;
  ctx.type = 'html';
  ctx.set('Cache-Control', 'no-store');
  ctx.body = renderPage(view, {
    currentUser: ctx.state.user ?? null,
    csrfToken: ctx.state.csrfToken ?? '',
    signupOpen: ctx.state.signupOpen ?? true,
    mailToFiles: ctx.state.mailToFiles ?? false,
    // The sign-in pages' "Continue with" buttons and password form (web/federation-routes.ts).
    upstreams: ctx.state.upstreams ?? [],
    directories: ctx.state.directories ?? [],
    passwordSignIn: ctx.state.passwordSignIn ?? true,
    ...locals,
    ...(locals.errors && lang !== 'en' ? { errors: translatedErrors(ctx, locals.errors as Record<string, string>, lang) } : {}),
    lang,
  });
}

/**
 * `view`'s language for this request (i18n.ts pageLanguage) with its locals in it. The error pages
 * take the reader's language only when all their words have a translation (error-page.ts), and are
 * English otherwise.
 */
export function inPageLanguage(ctx: Context, view: string, locals: PageLocals): { lang: Language; locals: PageLocals } {
  const lang = pageLanguage(ctx);
  if (!PAGES_OF_MESSAGES.has(view) || lang === 'en') return { lang, locals };
  const translated = errorPageIn(lang, locals, retryAfterOf(ctx));
  if (translated) return { lang, locals: translated };
  ctx.set('Content-Language', 'en');
  return { lang: 'en', locals };
}

function retryAfterOf(ctx: Context): number | undefined {
  const retryAfter = ctx.response.get('Retry-After');
  return retryAfter ? Number(retryAfter) : undefined;
}

/** The messages beside a form's fields in `lang`; a rate limit's wait is said from the Retry-After its route has set. */
function translatedErrors(ctx: Context, errors: Record<string, string>, lang: Language): Record<string, string> {
  return Object.fromEntries(Object.entries(errors).map(([field, message]) => [field, translateMessage(message, lang, retryAfterOf(ctx))]));
}

export function renderError(ctx: Context, status: number, title: string, message: string): void {
  render(ctx, 'error', { title, message, status }, status);
}
