import { expect } from 'chai';
import { NAMESPACES, RESOURCES, translator, type Language } from '../../src/i18n.js';
import type { Page } from './browser.js';
import { unescapeHtml } from './html.js';

/**
 * The English sentences of the resources, cut where a value or markup goes in: any of more than
 * three words seen on a German or Japanese page is a string left untranslated.
 */
export const ENGLISH: string[] = (() => {
  const texts: string[] = [];
  const walk = (tree: unknown) => {
    for (const value of Object.values(tree as Record<string, unknown>)) {
      if (typeof value === 'string') texts.push(...value.split(/\{\{[^}]*\}\}|<[^>]*>/));
      else walk(value);
    }
  };
  for (const ns of NAMESPACES) walk(RESOURCES.en[ns]);
  return [...new Set(texts.map((text) => text.trim()).filter((text) => text.split(/\s+/).length > 3))];
})();

/** What a reader sees of a page: its text without markup, the title and the buttons' words. */
export function textOf(page: Page): string {
  return unescapeHtml(page.text.replace(/<script[\s\S]*?<\/script>/g, '').replace(/<[^>]*>/g, ' ')).replace(/\s+/g, ' ');
}

/** The page is wholly in `lang`: its `lang` and headers say so, and no English sentence is left on it. */
export function expectIn(page: Page, lang: Language): void {
  expect(page.text).to.include(`<html lang="${lang}">`);
  expect(page.headers.get('content-language')).to.equal(lang);
  expect(page.headers.get('vary') ?? '').to.match(/accept-language/i);
  const text = textOf(page);
  for (const english of ENGLISH) expect(text, `an English string on the ${lang} page`).not.to.include(english);
  // The layout's words, not only the page's.
  expect(text).to.include(translator(lang)('common:footer.apiReference'));
}
