/** What the tests read off the pages' HTML. */

const CSRF_FIELD = /name="_csrf" value="([^"]+)"/;

/** The page's CSRF token, or undefined when it has no form that carries one. */
export function findCsrf(html: string): string | undefined {
  return CSRF_FIELD.exec(html)?.[1];
}

/** The one-time key of the page's (first) creating form, or undefined when it has none. */
export function findOnceKey(html: string): string | undefined {
  return /name="_once" value="([^"]+)"/.exec(html)?.[1];
}

export function csrfFrom(html: string): string {
  const token = findCsrf(html);
  if (!token) throw new Error('no CSRF token on the page');
  return token;
}

/** The action of the page's form posting to an action containing `contains`. */
export function formAction(html: string, contains: string): string {
  const actions = [...html.matchAll(/<form[^>]*action="([^"]+)"/g)].map((m) => m[1]!);
  const found = actions.find((a) => a.includes(contains));
  if (!found) throw new Error(`no form posting to *${contains}* on the page: ${actions.join(', ')}`);
  return found.replace(/&amp;/g, '&');
}

/** The text ejs escaped, back as plain text. */
export function unescapeHtml(html: string): string {
  return html.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&#34;/g, '"').replace(/&#39;/g, "'").replace(/&amp;/g, '&');
}

/** The error shown next to form field `name` (its `<name>-error` paragraph), as plain text, or undefined. */
export function fieldError(html: string, name: string): string | undefined {
  const found = new RegExp(`id="${name}-error">([^<]*)<`).exec(html)?.[1];
  return found === undefined ? undefined : unescapeHtml(found);
}

/** The value attribute of input `name`, or undefined when the input shows none. */
export function inputValue(html: string, name: string): string | undefined {
  const input = new RegExp(`<input id="${name}" name="${name}"[^>]*>`).exec(html)?.[0];
  const value = input && /value="([^"]*)"/.exec(input)?.[1];
  return typeof value === 'string' ? unescapeHtml(value) : undefined;
}

/** The page-level error message (error page or a form's problem), as plain text. */
export function errorMessage(html: string): string | undefined {
  const found = /data-testid="error-message">([^<]*)</.exec(html)?.[1];
  return found === undefined ? undefined : unescapeHtml(found);
}

/**
 * What the page's form posting to an action containing `contains` sends once filled in with
 * `values`: the form's own fields (hidden ones with the values the page gave them), each named
 * field set as `values` says. A value for a field the form does not have throws, so a test
 * cannot post a field the page no longer offers.
 */
export function filledForm(html: string, contains: string, values: Record<string, string> = {}): { action: string; fields: Record<string, string> } {
  const form = [...html.matchAll(/<form\b[^>]*\baction="([^"]*)"[^>]*>([\s\S]*?)<\/form>/g)].find((m) => m[1]!.includes(contains));
  if (!form) throw new Error(`no form posting to *${contains}* on the page`);
  const fields: Record<string, string> = {};
  for (const [element] of form[2]!.matchAll(/<(?:input|textarea|select)\b[^>]*>/g)) {
    const name = /\bname="([^"]+)"/.exec(element)?.[1];
    if (!name) continue;
    const value = /\bvalue="([^"]*)"/.exec(element)?.[1];
    fields[unescapeHtml(name)] = value === undefined ? '' : unescapeHtml(value);
  }
  for (const [name, value] of Object.entries(values)) {
    if (!(name in fields)) throw new Error(`the form posting to ${form[1]} has no field "${name}" (it has ${Object.keys(fields).join(', ')})`);
    fields[name] = value;
  }
  return { action: unescapeHtml(form[1]!), fields };
}
