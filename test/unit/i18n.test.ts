import { expect } from 'chai';
import { inWords } from '../../src/errors.js';
import { AccountDisabledError } from '../../src/services/users.js';
import { formatDate, LANGUAGES, NAMESPACES, RESOURCES, translateHtml, translateMessage, translator } from '../../src/i18n.js';
import { SPENT_MESSAGE } from '../../src/web/second-factor.js';
import { SCOPES } from '../../src/vocabulary.js';
import { urlSetting } from '../../src/services/federation/discovery.js';
import { sentence } from '../../src/web/form-errors.js';

const PLURAL = /_(zero|one|two|few|many|other)$/;

/** Every leaf of a resource as "a.b.c" → text. */
function leaves(tree: unknown, prefix = ''): Map<string, string> {
  const found = new Map<string, string>();
  for (const [key, value] of Object.entries(tree as Record<string, unknown>)) {
    const path = prefix ? `${prefix}.${key}` : key;
    if (typeof value === 'string') found.set(path, value);
    else for (const [k, v] of leaves(value, path)) found.set(k, v);
  }
  return found;
}

/** The keys of a namespace with plural forms folded into their key (Japanese has one form, English two). */
function byKey(tree: unknown): Map<string, string[]> {
  const folded = new Map<string, string[]>();
  for (const [key, text] of leaves(tree)) folded.set(key.replace(PLURAL, ''), [...(folded.get(key.replace(PLURAL, '')) ?? []), text]);
  return folded;
}

const variables = (text: string) => [...text.matchAll(/\{\{-?\s*(\w+)\s*\}\}/g)].map((m) => m[1]).sort();

describe('Languages of the pages', () => {
  for (const lng of LANGUAGES.filter((l) => l !== 'en')) {
    for (const ns of NAMESPACES) {
      it(`${lng}/${ns}.json has exactly the keys of en/${ns}.json, each with the same variables`, () => {
        const en = byKey(RESOURCES.en[ns]);
        const other = byKey(RESOURCES[lng][ns]);
        expect([...other.keys()].sort()).to.deep.equal([...en.keys()].sort());
        for (const [key, texts] of en) {
          const wanted = variables(texts[0]!);
          for (const text of other.get(key)!) expect(variables(text), `${lng}/${ns}:${key}`).to.deep.equal(wanted);
          expect(other.get(key)!.every((text) => text.trim() !== '' || key === '_separator'), `${lng}/${ns}:${key} is empty`).to.equal(true);
        }
      });
    }
  }

  it('every language has the plural form "other" of a plural key', () => {
    for (const lng of LANGUAGES) {
      for (const ns of NAMESPACES) {
        const keys = [...leaves(RESOURCES[lng][ns]).keys()];
        for (const key of keys.filter((k) => PLURAL.test(k))) expect(keys, `${lng}/${ns}`).to.include(key.replace(PLURAL, '_other'));
      }
    }
  });

  it('describes the scopes in English as the rest of the service does', () => {
    const t = translator('en');
    for (const [scope, description] of Object.entries(SCOPES)) expect(t(`consent:scopes.${scope.replace(':', '-')}`)).to.equal(description);
  });

  it('translates the messages the services write in English, and leaves others as they are', () => {
    expect(translateMessage(SPENT_MESSAGE, 'de')).to.equal(translator('de')('messages:codesSpent'));
    expect(translateMessage(new AccountDisabledError().message, 'ja')).to.equal(translator('ja')('messages:accountDisabled'));
    expect(translateMessage('Incorrect username, email or password.', 'en')).to.equal('Incorrect username, email or password.');
    expect(translateMessage('Something no page has said before.', 'de')).to.equal('Something no page has said before.');
  });

  it('finds a message with a value by its pattern, and the errors of a provider kind\'s URL settings by their labels', () => {
    const de = translator('de');
    expect(translateMessage('Scopes must be at most 1000 characters in all', 'de')).to.equal(de('messages-admin:scopesTooLong', { max: '1000' }));
    const setting = (label: string) => urlSetting('url', label, '');
    const refusal = (label: string, value: string) => {
      try {
        setting(label).parse(value);
      } catch (err) {
        return sentence((err as Error).message);
      }
      throw new Error(`${value} was taken`);
    };
    for (const [label, key] of [['Base URL', 'baseUrl'], ['API URL', 'apiUrl'], ['Authority', 'authority'], ['Issuer URL', 'issuerUrl']]) {
      for (const [value, problem] of [['not a url', 'NotAbsolute'], ['ftp://example.com', 'NotHttps'], ['https://u:p@example.com', 'Credentials'], ['https://example.com/?q', 'Query']]) {
        for (const lang of ['de', 'ja'] as const) expect(translateMessage(refusal(label!, value!), lang), `${label} ${value}`).to.equal(translator(lang)(`messages-admin:${key}${problem}`));
      }
    }
  });

  it('says a rate limit\'s wait again in the page\'s language, from the seconds', () => {
    const english = `Too many failed sign-in attempts. Try again ${inWords(150)}.`;
    expect(english).to.equal('Too many failed sign-in attempts. Try again in 3 minutes.');
    expect(translateMessage(english, 'de', 150)).to.equal('Zu viele fehlgeschlagene Anmeldeversuche. Versuchen Sie es in 3 Minuten erneut.');
    expect(translateMessage(english, 'ja', 150)).to.equal('サインインの失敗が多すぎます。3 分後にもう一度お試しください。');
  });

  it('says a wait in words, rounded up, in English unless asked otherwise', () => {
    expect([inWords(0.2), inWords(1), inWords(40), inWords(60), inWords(89), inWords(90), inWords(121)]).to.deep.equal(
      ['in 1 second', 'in 1 second', 'in 40 seconds', 'in 1 minute', 'in 1 minute', 'in 2 minutes', 'in 3 minutes'],
    );
    expect(inWords(40, 'de')).to.equal('in 40 Sekunden');
    expect(inWords(300, 'ja')).to.equal('5 分後');
  });

  it('puts values into sentences, escaping them only in a sentence with markup, and chooses plural forms', () => {
    expect(translator('de')('signin:continueWith', { provider: 'A & B' })).to.equal('Weiter mit A & B');
    expect(translateHtml('en', 'consent:sentTo', { origin: 'https://a.test/<x>&"' })).to.equal('You will be sent to <strong>https://a.test/&lt;x&gt;&amp;&#34;</strong>');
    expect(translator('en')('consent:ignored', { count: 1 })).to.include('a scope');
    expect(translator('en')('consent:ignored', { count: 2 })).to.include('scopes');
    expect(translator('ja')('consent:ignored', { count: 1 })).to.equal(translator('ja')('consent:ignored', { count: 2 }));
  });

  it('formats a date in the page\'s language, in UTC', () => {
    const date = new Date('2026-03-04T05:06:00Z');
    expect(formatDate(date, 'en')).to.equal('Mar 4, 2026, 5:06 AM UTC');
    expect(formatDate(date, 'de')).to.equal('04.03.2026, 05:06 UTC');
    expect(formatDate(date, 'ja')).to.equal('2026/03/04 5:06 UTC');
  });
});
