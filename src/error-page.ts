import { type Language, RESOURCES, translateMessage, translator } from './i18n.js';
/** A page's locals, as web/render.ts takes them. */
interface PageLocals { title: string; [key: string]: unknown }

/**
 * The error page (and the page of a failed sign-in with a provider) shows messages from all over the service, most of them written in English for
 * the API, the CLI and the logs. It follows the reader's language only when every sentence on it
 * is known (`errors:sentences`, or a service message of `messages`); otherwise the whole page
 * stays English, so that no page reads half in one language and half in another.
 */

const VALUE = /\{\{(\w+)\}\}/g;

/**
 * Each English sentence of `errors:sentences` and `upstream:sentences` (the failures of signing in
 * with a provider) as a pattern (a `{{value}}` matches any text) with its key.
 */
const SENTENCES = ['errors', 'upstream'].flatMap((ns) =>
  Object.entries((RESOURCES.en[ns] as { sentences: Record<string, string> }).sentences).map(([key, text]) => ({
    key: `${ns}:sentences.${key}`,
    names: [...text.matchAll(VALUE)].map((found) => found[1]),
    pattern: new RegExp(`^${text.split(VALUE).filter((_, i) => i % 2 === 0).map(escapeRegExp).join('(.+)')}$`),
  })),
);

/** The English `errors:sentences` (for the routes, which write the page's English). */
export const errorsInEnglish = (key: string, values?: Record<string, unknown>) => translator('en')(`errors:sentences.${key}`, values);

/** The views whose words come from all over the service, said by the rule above. */
export const PAGES_OF_MESSAGES: ReadonlySet<string> = new Set(['error', 'upstream-error']);

/** `text` in `lang`, or undefined when it has no translation; its values stay as they are. */
function translateSentence(text: string, lang: Language, retryAfterS?: number): string | undefined {
  for (const { key, names, pattern } of SENTENCES) {
    const found = pattern.exec(text);
    if (found) return translator(lang)(key, Object.fromEntries(names.map((name, i) => [name, found[i + 1]])));
  }
  const message = translateMessage(text, lang, retryAfterS);
  return message === text ? undefined : message;
}

interface Detail { label: string; value: string | null; code?: boolean }

/**
 * The error page's words (title, message, hint, the details' labels) in `lang`, or undefined when
 * one of them has no translation: the page is then rendered in English.
 */
export function errorPageIn(lang: Language, locals: PageLocals, retryAfterS?: number): PageLocals | undefined {
  if (lang === 'en') return locals;
  const say = (text: unknown) => (typeof text === 'string' ? translateSentence(text, lang, retryAfterS) : undefined);
  const title = say(locals.title);
  const message = say(locals.message);
  const hint = locals.hint ? say(locals.hint) : null;
  const details = ((locals.details ?? []) as Detail[]).map((detail) => ({ ...detail, label: say(detail.label) }));
  if (title === undefined || message === undefined || hint === undefined || details.some((detail) => detail.label === undefined)) return undefined;
  return { ...locals, title, message, hint, details };
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
