import { expect } from 'chai';
import { NAMESPACES, RESOURCES, translator, type Language } from '../../src/i18n.js';
import type { Page } from './browser.js';
import { unescapeHtml } from './html.js';

/**
 * The English sentences of the resources, cut where a value or markup goes in: any of more than
 * three words seen on a German or Japanese page is a string left untranslated.
 */
const ENGLISH: string[] = (() => {
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

/** No English sentence of the resources is left in `text` (a page's, a mail's), `where` it is. */
export function expectNoEnglish(text: string, where: string): void {
  for (const english of ENGLISH) expect(text, `an English string in ${where}`).not.to.include(english);
}

/** `page` is wholly in `lang`: it says so, and no English sentence of the resources is left on it, its layout translated too. */
export function expectIn(page: Page, lang: Language): void {
  expect(page.text).to.include(`<html lang="${lang}">`);
  expect(page.headers.get('content-language')).to.equal(lang);
  expect(page.headers.get('vary') ?? '').to.match(/accept-language/i);
  expectNoEnglish(textOf(page), `the ${lang} page`);
  // The layout's words, not only the page's.
  expect(textOf(page)).to.include(translator(lang)('common:footer.apiReference'));
}
