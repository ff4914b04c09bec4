import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import ejs from 'ejs';
import i18next, { type Resource, type ResourceLanguage } from 'i18next';
import type { Context } from 'koa';
import { inWords } from './errors.js';
import { LOCALES } from './paths.js';

/** The languages the pages come in; the first is the one a reader who asks for none gets. */
export const LANGUAGES = ['en', 'de', 'ja'] as const;
export type Language = (typeof LANGUAGES)[number];


/** `locales/<language>/<namespace>.json` of every language, read once (and bundled with the package). */
function loadResources(): Record<Language, ResourceLanguage> {
  const resources = {} as Record<Language, ResourceLanguage>;
  for (const lng of LANGUAGES) {
    const dir = join(LOCALES, lng);
    resources[lng] = Object.fromEntries(
      readdirSync(dir)
        .filter((file) => file.endsWith('.json'))
        .map((file) => [file.slice(0, -'.json'.length), JSON.parse(readFileSync(join(dir, file), 'utf8')) as ResourceLanguage[string]]),
    );
  }
  return resources;
}

export const RESOURCES: Readonly<Record<Language, ResourceLanguage>> = loadResources();
export const NAMESPACES = Object.keys(RESOURCES.en);

const instance = i18next.createInstance();
void instance.init({
  resources: RESOURCES as Resource,
  lng: 'en',
  fallbackLng: 'en',
  supportedLngs: [...LANGUAGES],
  ns: NAMESPACES,
  defaultNS: 'common',
  // Synchronous: the resources are in memory, and a page must not wait for a language.
  initAsync: false,
  // Views print with `<%= %>`, which escapes; escaping here too would show "&amp;".
  interpolation: { escapeValue: false },
  returnNull: false,
});

/** A page's `t`: a key ("namespace:key") and its values to the sentence in the page's language. */
export type Translate = (key: string, values?: Record<string, unknown>) => string;

const PLACEHOLDER = /\{\{(\w+)\}\}/g;

/**
 * i18next's `t` for `lang` (getFixedT, made once), each sentence kept once looked up, its
 * `{{values}}` put in here: the pages of signing in are on the authorization flow's hot path,
 * where i18next's lookup costs tens of microseconds a call. A plural (`count`) is i18next's.
 */
function fixedTranslate(lang: Language): Translate {
  const t = instance.getFixedT(lang);
  // Without values, i18next leaves a sentence's `{{name}}` as it is (skipOnVariables).
  const sentences = new Map<string, string>();
  return (key, values) => {
    if (values && 'count' in values) return t(key, values);
    let text = sentences.get(key);
    if (text === undefined) sentences.set(key, (text = t(key)));
    return values ? text.replace(PLACEHOLDER, (found, name: string) => (name in values ? String(values[name]) : found)) : text;
  };
}

/** One `t` per language, made once: rendering a page looks one up, never builds one. */
const TRANSLATORS = new Map<Language, Translate>(LANGUAGES.map((lng) => [lng, fixedTranslate(lng)]));

export function translator(lang: Language): Translate {
  return TRANSLATORS.get(lang)!;
}

/**
 * A sentence with markup around its values (printed with `<%- %>`): the values are escaped as
 * `<%= %>` escapes them; the markup is the resource's own.
 */
export function translateHtml(lang: Language, key: string, values: Record<string, unknown> = {}): string {
  const escaped = Object.fromEntries(Object.entries(values).map(([name, value]) => [name, typeof value === 'string' ? ejs.escapeXML(value) : value]));
  return translator(lang)(key, escaped);
}

/** `value` when it is one of the site's languages. */
export function asLanguage(value: unknown): Language | undefined {
  return typeof value === 'string' && (LANGUAGES as readonly string[]).includes(value) ? (value as Language) : undefined;
}

/** The reader's language from Accept-Language (q-values, and a region to its language: de-AT is de), English otherwise. */
export function negotiateLanguage(ctx: Context): Language {
  return asLanguage(ctx.acceptsLanguages(...LANGUAGES)) ?? 'en';
}

/**
 * The reader's language: the one the signed-in account chose (Account settings → Profile), else
 * the browser's (Accept-Language).
 */
export function readerLanguage(ctx: Context): Language {
  // `accountLanguage`: the account's choice where the page knows the account but the site's session did not load it (the provider's pages, consent).
  const chosen = (ctx.state.user as { language?: unknown } | undefined)?.language ?? ctx.state.accountLanguage;
  return asLanguage(chosen) ?? negotiateLanguage(ctx);
}

/**
 * The language of this request's page: the reader's. The response then varies by
 * Accept-Language and says its language.
 */
export function pageLanguage(ctx: Context): Language {
  ctx.vary('Accept-Language');
  const lang = readerLanguage(ctx);
  ctx.set('Content-Language', lang);
  return lang;
}

/** The `t` of this request's page, for the words a route passes in (its title, its messages). */
export function pageT(ctx: Context): Translate {
  return translator(pageLanguage(ctx));
}

const DATE_FORMATS = new Map(LANGUAGES.map((lng) => [lng, new Intl.DateTimeFormat(lng, { dateStyle: 'medium', timeStyle: 'short', timeZone: 'UTC' })]));

/** A date and time as a page in `lang` shows it, in UTC (said, so that nobody reads it as local time). */
export function formatDate(date: Date, lang: Language): string {
  return `${DATE_FORMATS.get(lang)!.format(date)} UTC`;
}

/**
 * The message tables: the `messages` namespace and any `messages-<area>` beside it. Each key's
 * English sentence is a message exactly as the services write it; `{{name}}` stands for a value
 * (a number, a name) that the sentence in another language carries over.
 */
const MESSAGE_NAMESPACES = NAMESPACES.filter((ns) => ns === 'messages' || ns.startsWith('messages-'));

type MessagePattern = { pattern: RegExp; key: string; names: string[] };

/** The key of each fixed English message, and the patterns of those with values. */
const { MESSAGE_KEYS, MESSAGE_PATTERNS } = (() => {
  const keys = new Map<string, string>();
  const patterns: MessagePattern[] = [];
  for (const ns of MESSAGE_NAMESPACES) {
    for (const [key, text] of Object.entries(RESOURCES.en[ns] as Record<string, string>)) {
      if (key.startsWith('_')) continue;
      const names = [...text.matchAll(PLACEHOLDER)].map((found) => found[1]!);
      if (names.length === 0) {
        keys.set(text, `${ns}:${key}`);
        continue;
      }
      const source = text.split(PLACEHOLDER).map((part, i) => (i % 2 === 1 ? '(.+?)' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))).join('');
      patterns.push({ pattern: new RegExp(`^${source}$`, 's'), key: `${ns}:${key}`, names });
    }
  }
  return { MESSAGE_KEYS: keys, MESSAGE_PATTERNS: patterns };
})();
const TRY_AGAIN = / Try again in [^.]+\.$/;

/** The translation of one English message of the tables, or undefined when none has it. */
function translateKnown(message: string, t: Translate): string | undefined {
  const key = MESSAGE_KEYS.get(message);
  if (key) return t(key);
  for (const { pattern, key: patternKey, names } of MESSAGE_PATTERNS) {
    const found = pattern.exec(message);
    if (found) return t(patternKey, Object.fromEntries(names.map((name, i) => [name, found[i + 1]])));
  }
  return undefined;
}

/**
 * A message of the services (which speak English to the API, the CLI and the logs) in `lang`,
 * when a message table has it, values and all; a rate limit's "Try again in …" is said again
 * from `retryAfterS`. A message without a translation stays as it is.
 */
export function translateMessage(message: string, lang: Language, retryAfterS?: number): string {
  if (lang === 'en') return message;
  const t = translator(lang);
  const known = translateKnown(message, t);
  if (known !== undefined) return known;
  if (retryAfterS !== undefined && TRY_AGAIN.test(message)) {
    const reason = translateKnown(message.replace(TRY_AGAIN, ''), t);
    if (reason !== undefined) return `${reason}${t('messages:_separator')}${t('messages:_tryAgain', { wait: inWords(retryAfterS, lang) })}`;
  }
  return message;
}
